/**
 * The real agents in long sessions, priced (issue 37's proof; issue 38's compaction timing).
 *
 *   npm run build && node --import ./test/support/ts-loader.mjs bench/agents.mjs [options]
 *
 * Claude Code and Codex CLI (pinned in test/support/clients/catalog.ts, installed in the clients'
 * cache) run offline against the repository's fake provider, 60 shell calls with outputs of about
 * 2–3.3k tokens each, four ways: straight, with the agent's own auto-compaction, through
 * Compactor's proxy (`node dist/server.js`, an LLM summarizer that takes 1.5 s per call and
 * writes about 2,000 tokens), and both. test/support/long-session/ holds the driver; this script
 * runs it, prices each session with Anthropic's cache rules and writes a section of
 * bench/RESULTS.md (between `<!-- agents:<label> -->` markers, replaced on the next run with the
 * same label) and every session's figures to bench/out/agents-<commit>-<label>.json.
 *
 * Options:
 *   --label <name>        the section's label (default `run`; the baseline was `before`)
 *   --calls <n>           tool calls per session (default 60)
 *   --slow-compaction     the fake takes 20 s to answer an agent's own compaction request (issue 38)
 *   --compact-at <share>  where the agents' own compaction starts, a share of the window (default 0.8;
 *                         through the proxy an agent sees the reduced requests' usage: lower it to make
 *                         it compact there too)
 *   --call-ms <n>         the fake takes n ms to answer each of the agent's other calls (default 0; a
 *                         model takes seconds: the summaries Compactor keeps are written between them)
 *   --instant-share <x>   the proxy's `instant_compaction_share` in the proxied ways (default: the
 *                         proxy's, 0.5): where the summary an agent's compaction request is answered
 *                         from starts being kept (the fake answers in milliseconds, so the calls
 *                         between that share and the agent's compaction go by faster than a summary)
 *   --agents a,b          default claude-code,codex
 *   --ways a,b            default straight,own,proxied,both; `instant` (issue 38): the agent's own
 *                         compaction through the proxy reducing nothing, so that only instant
 *                         compaction answers its compaction requests (against `own`)
 *   --dist <path>         the build to start (default ./dist)
 *   --no-write            print only
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { COMPACT_AT, LONG_AGENTS, WAYS, WINDOW } from '../test/support/long-session/config.ts';
import { runSession } from '../test/support/long-session/driver.ts';
import { commit, git, loadavg } from './lib/meta.mjs';

const ROOT = new URL('../', import.meta.url).pathname;
const { values } = parseArgs({
  options: {
    label: { type: 'string', default: 'run' },
    calls: { type: 'string', default: '60' },
    'slow-compaction': { type: 'boolean', default: false },
    'compact-at': { type: 'string', default: String(COMPACT_AT) },
    'instant-share': { type: 'string' },
    'call-ms': { type: 'string', default: '0' },
    agents: { type: 'string', default: LONG_AGENTS.join(',') },
    ways: { type: 'string', default: WAYS.join(',') },
    dist: { type: 'string', default: join(ROOT, 'dist') },
    'no-write': { type: 'boolean', default: false },
  },
});
const calls = Number(values.calls);
const compactionDelayMs = values['slow-compaction'] ? 20_000 : 0;
const compactAt = Number(values['compact-at']);
const callDelayMs = Number(values['call-ms']);
const instantShare = values['instant-share'] === undefined ? undefined : Number(values['instant-share']);
const proxyOptions = instantShare === undefined ? {} : { instant_compaction_share: instantShare };
const agents = values.agents.split(',');
const ways = values.ways.split(',');

const meta = {
  date: new Date().toISOString(),
  commit: commit(),
  src_dirty: git(['status', '--porcelain', '--', 'src']).length > 0,
  node: process.version,
  cpu: os.cpus()[0]?.model ?? 'unknown',
  nproc: os.availableParallelism(),
  memGiB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
  loadavg_start: loadavg(),
  calls,
  compactionDelayMs,
  compactAt,
  instantShare,
  callDelayMs,
};

const sessions = [];
for (const agent of agents) {
  for (const way of ways) {
    const started = Date.now();
    const s = await runSession(agent, way, {
      calls,
      compactionDelayMs,
      callDelayMs,
      compactAt,
      proxyOptions,
      dist: values.dist,
      timeoutMs: 1_200_000,
    });
    const f = s.figures;
    console.error(
      `${agent} ${way}: exit ${s.run.exitCode}${s.run.timedOut ? ' (timed out)' : ''}, ${f.upstream} upstream, bill ${f.bill.total}, ` +
        `${f.prefixBreaks} breaks, task ${f.taskPresent}/${f.upstream}, max ${f.maxTokens} tokens, ${Math.round((Date.now() - started) / 1000)} s`,
    );
    sessions.push({
      agent,
      way,
      window: s.window,
      exitCode: s.run.exitCode,
      timedOut: s.run.timedOut,
      durationMs: Math.round(s.run.durationMs),
      figures: f,
      serviceNotes: s.serviceNotes.length,
      upstream: s.upstream.map(({ usage: _u, ...u }) => u),
    });
  }
}
meta.loadavg_end = loadavg();

const fmt = (n) => (n === undefined || Number.isNaN(n) ? '–' : Math.round(n).toLocaleString('en-US'));
const ratio = (a, b) => (a && b ? (a / b).toFixed(2) : '–');
const find = (agent, way) => sessions.find((s) => s.agent === agent && s.way === way);
const median = (xs) => {
  const v = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  return v.length ? v[Math.floor((v.length - 1) / 2)] : undefined;
};

function sessionTable() {
  const rows = [
    '| agent | way | exit | upstream requests | bill (units) | cache reads | writes + uncached | output | summarizer | prefix breaks (per call) | task text present | max tokens (window) | outcomes | bypass reasons | held before the provider p50 / p99 (ms) | held ≥ 200 ms beside a summarizer call / waited on one |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | --- |',
  ];
  for (const s of sessions) {
    const f = s.figures;
    const outcomes = Object.entries(f.outcomes)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    const bypass =
      Object.entries(f.bypass)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ') || 'none';
    rows.push(
      `| ${s.agent} | ${s.way} | ${s.timedOut ? 'timeout' : s.exitCode} | ${f.upstream} | ${fmt(f.bill.total)} | ${fmt(f.bill.cacheRead)} | ${fmt(f.bill.cacheWrite)} | ${fmt(f.bill.output)} | ${fmt(f.bill.summarizer)} (${f.summarizerCalls} calls) | ${f.prefixBreaks} (${(f.prefixBreaks / Math.max(1, f.upstream)).toFixed(2)}) | ${f.taskPresent}/${f.upstream} | ${fmt(f.maxTokens)} (${fmt(s.window)}) | ${outcomes} | ${bypass} | ${fmt(f.heldP50)} / ${fmt(f.heldP99)} | ${f.heldWhileSummarizing.length} / ${f.waitedOnSummarizer.length} |`,
    );
  }
  return rows.join('\n');
}

function goalTable() {
  const rows = [
    '| agent | proxied / own compaction (goal ≤ 0.8) | both / own | proxied / straight | own / straight | proxied: prefix breaks per call (goal ≤ 0.25) | proxied: task text in | proxied: held p50 / p99 vs straight relay (ms) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const agent of agents) {
    const [st, own, px, both] = ['straight', 'own', 'proxied', 'both'].map((w) => find(agent, w)?.figures);
    const perCall = px ? px.prefixBreaks / Math.max(1, px.upstream) : undefined;
    rows.push(
      `| ${agent} | ${ratio(px?.bill.total, own?.bill.total)} | ${ratio(both?.bill.total, own?.bill.total)} | ${ratio(px?.bill.total, st?.bill.total)} | ${ratio(own?.bill.total, st?.bill.total)} | ${perCall === undefined ? '–' : perCall.toFixed(2)} | ${px ? `${px.taskPresent}/${px.upstream}` : '–'} | ${fmt(px?.heldP50)} / ${fmt(px?.heldP99)} vs ${fmt(st?.heldP50)} / ${fmt(st?.heldP99)} |`,
    );
  }
  return rows.join('\n');
}

function compactionTable() {
  const rows = [
    "| agent | way | compaction requests | answered by Compactor | reached the provider | through the relay p50 / max (ms) | the provider's answer p50 (ms) | the agent waited on them in all (s) | bill / own's | outcomes |",
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  for (const s of sessions) {
    const c = s.figures.compactions;
    if (c.length === 0) continue;
    const times = c.map((x) => x.durationMs).filter((x) => x !== undefined);
    const outcomes = [...new Set(c.map((x) => x.outcome ?? 'none'))].join(', ');
    const answered = c.filter((x) => x.outcome === 'compaction-answered').length;
    const waited = times.reduce((a, b) => a + b, 0) / 1000;
    const own = find(s.agent, 'own')?.figures.bill.total;
    rows.push(
      `| ${s.agent} | ${s.way} | ${c.length} | ${answered} | ${c.filter((x) => x.forwarded).length} | ${fmt(median(times))} / ${fmt(Math.max(...times))} | ${fmt(median(s.figures.providerCompactionMs))} | ${waited.toFixed(1)} | ${s.way === 'own' ? '1.00' : ratio(s.figures.bill.total, own)} | ${outcomes} |`,
    );
  }
  return rows.length > 2 ? rows.join('\n') : 'No agent sent a compaction request of its own.';
}

const command = `npm run build && node --import ./test/support/ts-loader.mjs bench/agents.mjs --label ${values.label}${values['slow-compaction'] ? ' --slow-compaction' : ''}${calls !== 60 ? ` --calls ${calls}` : ''}${compactAt !== COMPACT_AT ? ` --compact-at ${compactAt}` : ''}${instantShare === undefined ? '' : ` --instant-share ${instantShare}`}${callDelayMs ? ` --call-ms ${callDelayMs}` : ''}${values.agents !== LONG_AGENTS.join(',') ? ` --agents ${values.agents}` : ''}${values.ways !== WAYS.join(',') ? ` --ways ${values.ways}` : ''}`;
const section = `<!-- agents:${values.label} -->
#### Run \`${values.label}\`: commit \`${meta.commit}\`${meta.src_dirty ? ' (src/ modified)' : ''}, ${meta.date.slice(0, 16).replace('T', ' ')} UTC

**Command:** \`${command}\`. Node ${meta.node}, ${meta.nproc} cores (${meta.cpu}), ${meta.memGiB} GiB; load average ${meta.loadavg_start[0]} at the start, ${meta.loadavg_end[0]} at the end. ${calls} tool calls per session; windows: Claude Code ${fmt(WINDOW['claude-code'])}, Codex ${fmt(WINDOW.codex)}; the agents' own compaction at ${compactAt} of the window${instantShare === undefined ? '' : `; the proxy's instant compaction summary kept from ${instantShare} of it`}; the fake answers an agent's own compaction request in ${compactionDelayMs / 1000} s${callDelayMs ? ` and each other call in ${callDelayMs / 1000} s` : ''}.

${sessionTable()}

${goalTable()}

The agents' own compaction requests (issue 38: through the proxy they should be answered in under 2 s by instant compaction, not reach the provider; _bill / own's_: the session's bill over the agent's own compaction's, same agent):

${compactionTable()}
<!-- /agents:${values.label} -->`;

console.log(section);
if (!values['no-write']) {
  mkdirSync(join(ROOT, 'bench/out'), { recursive: true });
  const out = join(ROOT, `bench/out/agents-${meta.commit}-${values.label}.json`);
  writeFileSync(out, `${JSON.stringify({ meta, sessions }, null, 1)}\n`);
  const file = join(ROOT, 'bench/RESULTS.md');
  const text = readFileSync(file, 'utf8');
  const begin = `<!-- agents:${values.label} -->`;
  const end = `<!-- /agents:${values.label} -->`;
  const at = text.indexOf(begin);
  const anchor = '<!-- agents:end -->';
  const next =
    at >= 0
      ? `${text.slice(0, at)}${section}${text.slice(text.indexOf(end) + end.length)}`
      : text.includes(anchor)
        ? text.replace(anchor, `${section}\n\n${anchor}`)
        : text.replace('\n## History', `\n### Agents\n\n${section}\n\n${anchor}\n\n## History`);
  writeFileSync(file, next);
  // The repository's formatter aligns Markdown tables: the file stays as `npm run lint` wants it.
  execFileSync(join(ROOT, 'node_modules/.bin/biome'), ['format', '--write', file], { stdio: 'ignore' });
  console.error(`wrote ${out} and bench/RESULTS.md`);
}
