// A tenant's schema `pattern` runs on every tool call's arguments in the agent and the tools
// service, on the one event loop all tenants share. JavaScript regular expressions backtrack: a
// pattern like `^(a+)+$` takes exponential time on `aaaa…!`, so one tenant's tool could stall
// every tenant's turns. Patterns are therefore held to a shape that cannot blow up that way.

/** Longest `pattern` a tool schema may use (characters). */
export const MAX_PATTERN_CHARS = 512;

interface Group {
  /** A repetition (`*`, `+`, `{n,}`, `{n,m}`) inside the group, at any depth. */
  repeats: boolean;
  /** An alternation (`|`) directly inside the group. */
  alternates: boolean;
}

/**
 * Why `pattern` could backtrack catastrophically, or undefined when it cannot in the ways checked:
 * a repeated group that itself repeats or alternates (`(a+)+`, `(a|aa)*`, `(?:x*y)*`), a
 * backreference (`\1`, `\k<n>`), or more than MAX_PATTERN_CHARS characters. Conservative: some
 * harmless patterns are refused too, never a harmful one of these shapes accepted.
 */
export const unsafePatternReason = (pattern: string): string | undefined => {
  if (pattern.length > MAX_PATTERN_CHARS) return `is longer than ${MAX_PATTERN_CHARS} characters`;
  const stack: Group[] = [{ repeats: false, alternates: false }];
  let inClass = false;
  const repetitionAt = (i: number): boolean => {
    const c = pattern[i];
    if (c === '*' || c === '+') return true;
    // `{n}` repeats a fixed count; `{n,}` and `{n,m}` vary.
    return c === '{' && /^\{\d+,\d*\}/.test(pattern.slice(i));
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && (/[1-9]/.test(next) || next === 'k')) return 'uses a backreference';
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') stack.push({ repeats: false, alternates: false });
    else if (c === '|') stack.at(-1)!.alternates = true;
    else if (repetitionAt(i)) stack.at(-1)!.repeats = true;
    else if (c === ')') {
      if (stack.length === 1) return undefined; // unbalanced: the RegExp constructor refuses it
      const group = stack.pop()!;
      if (repetitionAt(i + 1) && (group.repeats || group.alternates)) {
        return 'repeats a group that itself repeats or alternates (exponential backtracking)';
      }
      if (group.repeats) stack.at(-1)!.repeats = true;
    }
  }
  return undefined;
};

/**
 * The RegExp engine ajv compiles `pattern` and `patternProperties` with: a pattern of an unsafe
 * shape does not compile, so the schema is refused when the tool is defined.
 */
export const safeRegExp = Object.assign(
  (pattern: string, flags: string): RegExp => {
    const reason = unsafePatternReason(pattern);
    if (reason !== undefined) throw new Error(`pattern ${JSON.stringify(pattern.slice(0, 80))} ${reason}`);
    return new RegExp(pattern, flags);
  },
  { code: 'new RegExp' },
);
