// Medians over several outputs of bench/load.mjs, cell by cell (the machine is shared and noisy).
// Run: node bench/load-median.mjs bench/out/load-run7.txt bench/out/load-run8.txt bench/out/load-run9.txt
import { readFileSync } from 'node:fs';
import { fmt } from './lib/stats.mjs';

const files = process.argv.slice(2);
if (files.length === 0) throw new Error('usage: node bench/load-median.mjs <load output>...');
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const cells = new Map();
for (const file of files) {
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m =
      /^\| (\/v1\/\w+) \| (\d+) \| ([\d.]+) \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+) \| (\d+) \| [\d.]+x \| (\d+) \| (\d+) \|$/.exec(
        line,
      );
    if (!m) continue;
    const key = `${m[1]} | ${m[2]}`;
    const [rps, p50, p99, frps, fp50, fp99, errors, non2xx] = m.slice(3).map(Number);
    const cell = cells.get(key) ?? [];
    cell.push({ rps, p50, p99, frps, fp50, fp99, errors, non2xx });
    cells.set(key, cell);
  }
}
console.log(`Medians of ${files.length} runs (${files.join(', ')})`);
console.log(
  '| endpoint | connections | req/s | p50 ms | p99 ms | floor req/s | floor p50 | floor p99 | floor/ours req/s | errors, non-2xx (all runs) |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const [key, runs] of cells) {
  const med = (k) => median(runs.map((r) => r[k]));
  const errors = runs.reduce((n, r) => n + r.errors, 0);
  const non2xx = runs.reduce((n, r) => n + r.non2xx, 0);
  console.log(
    `| ${key} | ${fmt(med('rps'))} | ${med('p50')} | ${med('p99')} | ${fmt(med('frps'))} | ${med('fp50')} | ${med('fp99')} | ${fmt(median(runs.map((r) => r.frps / r.rps)), 2)}x | ${errors}, ${non2xx} |`,
  );
}
