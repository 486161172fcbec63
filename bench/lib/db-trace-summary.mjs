/**
 * Summarizes a `BENCH_DB_TRACE` directory: MongoDB commands per process and per turn (text
 * turn, one-tool turn), counted inside the bench's marked turn windows, with their mean time.
 * `node bench/lib/db-trace-summary.mjs <dir>`
 */
import { readFileSync, readdirSync } from 'node:fs';

const dir = process.argv[2];
/** A commit filter's stream with its ids left out (`conversation-*`), or `-`. */
const categoryOf = (stream) => {
  const name = stream.includes('|') ? stream.split('|')[1] : stream;
  return name.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{4,}/g, '*').replace(/^(tenant-[a-z]+)-.*/, '$1-*');
};
const windows = { text: [], tool: [] };
let open = {};
for (const line of readFileSync(`${dir}/window.log`, 'utf8').trim().split('\n')) {
  const [at, what] = line.split(' ');
  const [kind, edge] = what.split('-');
  if (edge === 'start') open[kind] = Number(at);
  else windows[kind].push([open[kind], Number(at)]);
}
for (const kind of ['text', 'tool']) {
  const turns = windows[kind].length;
  console.log(`${kind} turn (${turns} turns): MongoDB commands per turn by process (mean ms each)`);
  for (const file of readdirSync(dir).filter((f) => f !== 'window.log' && f.endsWith('.log'))) {
    const counts = new Map();
    for (const line of readFileSync(`${dir}/${file}`, 'utf8').trim().split('\n')) {
      const [at, ms, command, collection, stream = '-'] = line.split(' ');
      const t = Number(at);
      if (!windows[kind].some(([a, b]) => t >= a && t <= b)) continue;
      const key = `${command} ${collection}${collection === 'commits' ? `:${categoryOf(stream)}` : ''}`;
      const c = counts.get(key) ?? { n: 0, ms: 0 };
      counts.set(key, { n: c.n + 1, ms: c.ms + Number(ms) });
    }
    const total = [...counts.values()].reduce((s, c) => s + c.n, 0);
    const parts = [...counts]
      .sort((a, b) => b[1].n - a[1].n)
      .map(([k, c]) => `${k} ${(c.n / turns).toFixed(1)} (${(c.ms / c.n).toFixed(1)})`);
    console.log(`  ${file.replace('.log', '')}: ${(total / turns).toFixed(1)} — ${parts.join(', ')}`);
  }
}
