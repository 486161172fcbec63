// Which methods a path is served with, so that a known path asked with another method is told
// 405 and `Allow` (RFC 9110 §15.5.6), not 404. Fastify's router only answers "no route"; this
// table is filled from its `onRoute` hook with the same patterns and matched the same way
// (`:param` is one non-empty segment, `*` the rest, one trailing slash ignored).

/** One registered route as a list of segments. */
interface Pattern {
  method: string;
  segments: readonly string[];
}

const segmentsOf = (path: string): string[] => {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return trimmed.split('/');
};

const matches = (pattern: readonly string[], path: readonly string[]): boolean => {
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i]!;
    if (expected === '*') return true;
    const actual = path[i];
    if (actual === undefined) return false;
    if (expected.startsWith(':')) {
      if (actual === '') return false;
      continue;
    }
    if (actual !== expected) return false;
  }
  return pattern.length === path.length;
};

/** The routes a server registered, by method and URL pattern. */
export class RouteTable {
  private readonly patterns: Pattern[] = [];

  /** Records a route as Fastify's `onRoute` hook reports it (one method or several). */
  add(method: string | readonly string[], url: string): void {
    for (const one of typeof method === 'string' ? [method] : method) {
      this.patterns.push({ method: one.toUpperCase(), segments: segmentsOf(url) });
    }
  }

  /**
   * The methods `url` (a request URL, query string allowed) is served with, sorted, HEAD included
   * wherever GET is; empty for a path no route matches.
   */
  methodsOf(url: string): string[] {
    const path = segmentsOf(url.split('?', 1)[0] ?? '');
    const methods = new Set<string>();
    for (const pattern of this.patterns) {
      if (matches(pattern.segments, path)) methods.add(pattern.method);
    }
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods].sort();
  }
}
