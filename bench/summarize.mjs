/**
 * Combines several runs of bench/window.mjs: for every figure, its value in each run (each
 * already a median of that run's repetitions) and the median across runs, with the goal and
 * whether the across-run median meets it. Prints Markdown.
 *
 * Usage: node bench/summarize.mjs [bench/out/window-*.json ...]   (default: every file there)
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fmt, median } from './lib/stats.mjs';

const OUT = fileURLToPath(new URL('./out/', import.meta.url));
const files =
  process.argv.length > 2
    ? process.argv.slice(2)
    : readdirSync(OUT)
        .filter((f) => /^window-.*\.json$/.test(f))
        .sort()
        .map((f) => `${OUT}${f}`);
if (files.length === 0) {
  console.error('no runs: run npm run bench first');
  process.exit(1);
}
const runs = files.map((f) => JSON.parse(readFileSync(f, 'utf8')));

console.log(`Runs (${runs.length}):\n`);
console.log('| run | date (UTC) | commit | src dirty | dist | node | cpus | reps | load avg start → end | seconds |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
runs.forEach((r, i) => {
  const m = r.meta;
  console.log(
    `| ${i + 1} | ${m.date} | ${m.commit} | ${m.src_dirty ? 'yes' : 'no'} | ${m.dist_hash}${m.dist_hash_end && m.dist_hash_end !== m.dist_hash ? ` → ${m.dist_hash_end}` : ''} | ${m.node} | ${m.nproc} | ${m.reps} (fresh ${m.fresh_reps}) | ${(m.loadavg_start ?? []).join(' ')} → ${(m.loadavg_end ?? []).join(' ')} | ${m.seconds ?? ''} |`,
  );
});

const keys = [...new Set(runs.flatMap((r) => r.figures.map((f) => f.key)))];
console.log(`\n| figure | unit | ${runs.map((_, i) => `run ${i + 1}`).join(' | ')} | median | goal | met |`);
console.log(`|---|---|${runs.map(() => '---:').join('|')}|---:|---|---|`);
for (const key of keys) {
  const per = runs.map((r) => r.figures.find((f) => f.key === key));
  const any = per.find(Boolean);
  const values = per.map((f) => (f ? f.value : Number.NaN));
  const med = median(values);
  const digits = any.unit === 'ms' ? 1 : 2;
  const goal = any.goal ? `${any.goal.op} ${any.goal.value}` : '';
  const met = any.goal ? ((any.goal.op === '<=' ? med <= any.goal.value : med >= any.goal.value) ? 'yes' : '**no**') : '';
  console.log(
    `| ${key} | ${any.unit} | ${values.map((v) => fmt(v, digits)).join(' | ')} | ${fmt(med, digits)} | ${goal} | ${met} |`,
  );
}
