/** bench/zero-wait.mjs's table: one row per run and mode, a total per mode, and the goals. */
import { median } from './stats.mjs';

const k = (x) => `${(x / 1000).toFixed(1)}k`;
const row = (name, r, ratio) =>
  `| ${name} | ${r.mode} | ${r.fits} | ${r.slow} | ${Math.round(r.max_ms)} | ${Math.round(r.p50_ms)} | ${r.splices} | ${r.on_path_fits} | ${r.summarizer_calls} | ${r.wasted} | ${k(r.bill)} | ${ratio} | ${r.over} | ${r.invalid} |`;

/** The per-run table with a total per mode, and the goals. */
export function report(results, modes) {
  const lines = [
    '| run | prepare | fit calls | > 1 s | max ms | p50 ms | splices | fits summarizing on the request path | summarizer calls | prepared, never spliced | bill | on / off | over 32k | invalid |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const byMode = Object.fromEntries(modes.map((m) => [m, results.filter((r) => r.mode === m)]));
  for (const r of results) r.wasted = Object.entries(r.prepared).reduce((n, [s, c]) => n + (s === 'spliced' ? 0 : c), 0);
  for (const on of byMode.on) {
    const off = byMode.off.find((r) => r.run === on.run);
    lines.push(row(on.run, on, `${(on.bill / off.bill).toFixed(3)}×`), row(on.run, off, ''));
  }
  const total = (rs, mode) => ({
    mode,
    fits: rs.reduce((n, r) => n + r.fits, 0),
    slow: rs.reduce((n, r) => n + r.slow, 0),
    max_ms: Math.max(...rs.map((r) => r.max_ms)),
    p50_ms: median(rs.map((r) => r.p50_ms)),
    ...Object.fromEntries(
      ['splices', 'on_path_fits', 'summarizer_calls', 'wasted', 'bill', 'over', 'invalid'].map((f) => [
        f,
        rs.reduce((n, r) => n + r[f], 0),
      ]),
    ),
  });
  const on = total(byMode.on, 'on');
  const off = total(byMode.off, 'off');
  const ratio = on.bill / off.bill;
  lines.push(row('**total** (p50: median of runs)', on, `**${ratio.toFixed(3)}×**`), row('**total**', off, ''));
  const goals = {
    none_over_1s_with_prepare: on.slow === 0,
    off_has_calls_over_1s: off.slow > 0,
    bill_within_2pct: Math.abs(ratio - 1) <= 0.02,
    none_over_window: on.over + off.over === 0,
    all_valid: on.invalid + off.invalid === 0,
  };
  return { table: lines.join('\n'), totals: { on, off, ratio }, goals };
}
