/** bench/zero-wait.mjs's table: one row per run and mode, a total per mode, and the issue's goals. */
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

/** bench/zero-wait-replicas.mjs: what each prepared range cost, and where summaries were made and spliced. */
export function rangeTable(perRange) {
  const lines = [
    '| run | prepare | prepared ranges | summarizer calls | by replica-0 / replica-1 | prompts sent twice | usage per range (calls, GET) | splices | spliced on the other replica | fits summarizing on the request path |',
    '| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |',
  ];
  for (const p of perRange) {
    const by = `${p.by_caller['replica-0'] ?? 0} / ${p.by_caller['replica-1'] ?? 0}`;
    const usage = p.view_calls.length ? p.view_calls.join(', ') : '–';
    lines.push(
      `| ${p.run} | ${p.mode} | ${p.ranges} | ${p.summarizer_calls} | ${by} | ${p.prompts_sent_twice} | ${usage} | ${p.splices} | ${p.spliced_elsewhere} | ${p.on_path_fits} |`,
    );
  }
  return lines.join('\n');
}

/** One kill scenario's column of `killTable`: its cells, row by row. */
function killColumn({ result: r, kill }, off, summarizerMs) {
  if (!kill) return ['nothing was killed (no summarizer call in flight before a fit)'];
  const survivor = kill.calls.find((c) => c.delivered);
  const undelivered = r.summarizer_records.filter((s) => !s.delivered).length;
  const calls = kill.calls.map(
    (c) => `${c.caller}: ${c.delivered ? 'answered' : 'not delivered'}, ${c.start_s.toFixed(1)} to ${c.end_s.toFixed(1)} s`,
  );
  return [
    `replica-${kill.victim}, ${kill.into_call_ms} ms into its ${summarizerMs / 1000} s summarizer call, before fit call ${kill.before_fit}`,
    calls.join('; '),
    survivor ? `${survivor.start_s.toFixed(1)} s after the kill, ready at ${survivor.end_s.toFixed(1)} s` : 'no',
    kill.splice
      ? `fit call ${kill.splice.call}${kill.splice.by_survivor ? ', on the survivor' : ''}, \`usage.prepared.calls\` ${kill.splice.billed_calls}`
      : 'never',
    kill.view ? `${kill.view.state}, \`usage.calls\` ${kill.view.calls}` : 'unknown',
    `${r.fits}, ${r.slow}, ${Math.round(r.max_ms)}`,
    `${r.splices}, ${r.on_path_fits}`,
    `${r.summarizer_calls}, ${undelivered}`,
    `${k(r.bill)}${off ? ` (${(r.bill / off.bill).toFixed(3)}× off)` : ''}`,
    `${r.over}, ${r.invalid}`,
  ];
}

/** bench/zero-wait-replicas.mjs: the kill scenarios (one run, preparing on), a column per lock duration. */
export function killTable(kills, offOf, summarizerMs) {
  const labels = [
    'killed (SIGKILL)',
    "the killed range's summarizer calls (seconds from the kill)",
    'taken over by the survivor',
    'spliced',
    '`GET /v1/prepared/{id}` at the end',
    'fit calls, > 1 s, max ms',
    'splices, fits summarizing on the request path',
    'summarizer calls (all), not delivered',
    'bill (every call the fake was sent)',
    'over 32k, invalid',
  ];
  const columns = kills.map((kill) => killColumn(kill, offOf(kill), summarizerMs));
  const head = kills.map((kill) => `\`COMPACTOR_JOBS_LOCK_MS\` ${kill.lock_ms}`);
  return [
    `| ${kills[0]?.result.run ?? ''} | ${head.join(' | ')} |`,
    `| --- | ${head.map(() => '---').join(' | ')} |`,
    ...labels.map((label, i) => `| ${label} | ${columns.map((c) => c[i] ?? '').join(' | ')} |`),
  ].join('\n');
}
