/**
 * Summarization benchmark (issue 4): what rolling summaries cost an agent, replayed on the real
 * corpus, against the naive approach.
 *
 *  1. Replay. Each corpus transcript (test/fixtures/corpus/{openai,anthropic}/*.json) is grown
 *     as an agent grows it: from the first user message to the end, one group at a time (a user
 *     message, an assistant message, or an assistant message with all of its tool results), so
 *     every prefix sent is structurally valid. At each step the agent sends its history to
 *     `POST /v1/summarize` with
 *       {"trigger": {"tokens": T}, "keep": {"messages": 20}, "max_input_tokens": 8000, "model": meta.model}
 *     and, like a real agent, keeps what comes back: after a summary is applied it continues from
 *     the returned messages plus the messages it appends afterwards. The Compactor is a child
 *     process (`node dist/server.js`, store `memory:`) whose LLM summarizer points at the fake
 *     OpenAI-compatible server of bench/lib/fake-llm.mjs (real HTTP, o200k_base usage, a
 *     deterministic 300–600-token structured summary, no delay). Billed tokens come from each
 *     response's `usage` and are cross-checked against the fake server's records of the calls made
 *     during that request; every recorded call's prompt is checked against max_input_tokens.
 *  2. Naive. What the Manning book's code does: the agent keeps its full history and, on every
 *     step where that history is over T, re-summarizes the whole middle (between the first user
 *     message and the last 20 messages of the original, un-summarized history) from scratch, in one
 *     call: no fold, no cache, no input budget. Simulated in process with the service's own code
 *     from dist/: the same trigger check, safe cut and range (a dry run of the summarize strategy),
 *     the same transcript rendering (`rangeEntries`, `renderTranscript`) and the same prompt
 *     (`SYSTEM_PROMPT`, `summaryPrompt`), counted as the fake server counts (o200k_base over both
 *     messages' contents), and the reply the fake server would give to that prompt. Also reported:
 *     the naive approach only at the steps where the service itself called the summarizer (same
 *     number of calls, each from scratch).
 *  3. Overhead. A fresh Compactor and the fake server answering after 500 ms: the replay of the
 *     transcripts that made the most summarizer calls in part 1, until at least OVERHEAD_N requests
 *     called the summarizer. For each such request: its wall time at the client minus the time the
 *     fake server spent on its calls (the union of their intervals, from the arrival of each call to
 *     the end of its answer), as a share of the wall time. Goal: median < 10%.
 *
 * Usage: npm run build && node bench/summarize-replay.mjs
 *        node bench/summarize-replay.mjs --combine bench/out/summarize-replay-*.json   (Markdown, medians across runs)
 * Env: SUMBENCH_T (trigger tokens, default 20000), SUMBENCH_KEEP (20), SUMBENCH_MAX_INPUT (8000),
 *      SUMBENCH_FILES (regex on "openai/<file>", default all 27), SUMBENCH_PARTS (default "ro":
 *      r = replay + naive, o = overhead), SUMBENCH_OVERHEAD_N (default 24), SUMBENCH_DELAY_MS (500),
 *      SUMBENCH_OUT (JSON path), SUMBENCH_EXAMPLES (folder for the first request showing each warning,
 *      default bench/out/summarize-replay-examples), BENCH_COMMIT (commit of an exported tree that has no .git).
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { countTokens, fakeReply, promptTokens, startFakeLlm } from './lib/fake-llm.mjs';
import { commit, loadavg } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';
import { fmt, median } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

if (process.argv[2] === '--combine') {
  combine(process.argv.slice(3));
  process.exit(0);
}

const T = Number(process.env.SUMBENCH_T ?? 20_000);
const KEEP = Number(process.env.SUMBENCH_KEEP ?? 20);
const MAX_INPUT = Number(process.env.SUMBENCH_MAX_INPUT ?? 8000);
const FILES = new RegExp(process.env.SUMBENCH_FILES ?? '.');
const PARTS = process.env.SUMBENCH_PARTS ?? 'ro';
const OVERHEAD_N = Number(process.env.SUMBENCH_OVERHEAD_N ?? 24);
const DELAY_MS = Number(process.env.SUMBENCH_DELAY_MS ?? 500);
const SUMMARIZER_MODEL = 'fake-small';
/** Where the first request showing each warning is written (the request body, as sent). */
const EXAMPLES = process.env.SUMBENCH_EXAMPLES ?? `${ROOT}bench/out/summarize-replay-examples`;
mkdirSync(EXAMPLES, { recursive: true });

const T0 = performance.now();
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);

// The service's own modules, for grouping and for the naive simulation.
const dist = (p) => import(`${ROOT}dist/${p}`);
const { Compactor, TokenCounter } = await dist('index.js');
const { summarizeStrategy, SummarizeOptions } = await dist('strategies/summarize/index.js');
const { renderTranscript } = await dist('summarizers/transcript.js');
const { SYSTEM_PROMPT, summaryPrompt } = await dist('summarizers/prompts.js');
const { prepareRequest } = await dist('service/request-history.js');

const CORPUS = ['openai', 'anthropic'].flatMap((dir) =>
  readdirSync(`${CORPUS_DIR}/${dir}`)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => `${dir}/${f}`)
    .filter((rel) => FILES.test(rel))
    .map((rel) => {
      const file = JSON.parse(readFileSync(`${CORPUS_DIR}/${rel}`, 'utf8'));
      return {
        rel,
        messages: file.messages,
        tools: file.tools,
        system: file.system,
        model: typeof file.meta?.model === 'string' ? file.meta.model : undefined,
      };
    }),
);

// ---------------------------------------------------------------------------------------------
// The naive approach, simulated with the service's code (in process, nothing sent anywhere)
// ---------------------------------------------------------------------------------------------

let captured;
/** A summarizer that only records what it would be asked (the strategy's dry run calls plan()). */
const recordingSummarizer = {
  kind: 'llm',
  plan(request) {
    captured = request;
    return { calls: [], model: null };
  },
  async summarize() {
    throw new Error('not called in a dry run');
  },
};
const counter = new TokenCounter(500_000);
const local = new Compactor(counter, { summarizer: recordingSummarizer });
const strategyOptions = SummarizeOptions.parse({ keep: { messages: KEEP }, max_input_tokens: MAX_INPUT });

const historyFields = (input, messages) => ({
  messages,
  ...(input.model ? { model: input.model } : {}),
  ...(input.tools ? { tools: input.tools } : {}),
  ...(input.system !== undefined ? { system: input.system } : {}),
});

/**
 * The naive call on an original, un-summarized prefix: null when under the trigger, else the one
 * call's prompt and reply tokens (the whole middle, from scratch).
 */
async function naiveCall(input, messages) {
  captured = undefined;
  const res = await local.run(
    summarizeStrategy,
    { ...historyFields(input, messages), trigger: { tokens: T }, dry_run: true },
    strategyOptions,
  );
  if (res.reason === 'below_trigger') return null;
  if (!captured) return { input: 0, output: 0, calls: 0, reason: res.reason };
  const prompt = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: summaryPrompt(renderTranscript(captured.entries), captured.previous, captured.instructions) },
  ];
  return { input: promptTokens(prompt), output: countTokens(fakeReply(prompt)), calls: 1, entries: captured.entries };
}

/** Tokens of the rendered transcript of a whole transcript's middle, with and without tool results rendered twice. */
function duplicateShare(entries) {
  const deduped = entries.filter(
    (e, i) => !(e.role === 'tool' && !e.tool && i > 0 && entries[i - 1].tool && entries[i - 1].text === e.text),
  );
  return {
    entries: entries.length,
    duplicates: entries.length - deduped.length,
    tokens: countTokens(renderTranscript(entries)),
    tokens_deduped: countTokens(renderTranscript(deduped)),
  };
}

// ---------------------------------------------------------------------------------------------
// The replay
// ---------------------------------------------------------------------------------------------

const MARKER = /\[compactor:summary (?:art_[0-9a-f]{24}|none) /g;

/** Where the agent's history may end: after the first user message, then after each group. */
function boundaries(input) {
  const h = prepareRequest(historyFields(input, input.messages), counter);
  const first = h.firstUser >= 0 ? h.firstUser : h.head;
  return h.groups.filter((g) => g.end > first).map((g) => g.end);
}

async function post(url, body) {
  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  const ms = performance.now() - t0;
  return { status: res.status, json: res.status === 200 ? JSON.parse(text) : null, text, ms, t0, t1: t0 + ms };
}

/** The union of the fake server's handling intervals, in ms. */
function busy(records) {
  const spans = records.map((r) => [r.start, r.end]).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let cur = null;
  for (const [s, e] of spans) {
    if (!cur || s > cur[1]) {
      if (cur) total += cur[1] - cur[0];
      cur = [s, e];
    } else cur[1] = Math.max(cur[1], e);
  }
  return cur ? total + cur[1] - cur[0] : 0;
}

/**
 * Replays one transcript against a Compactor. Returns its totals, the requests that called the
 * summarizer, and (with `naive`) the naive approach's totals over the same steps.
 */
async function replay(server, fake, input, { naive = true } = {}) {
  const M = input.messages;
  const ends = boundaries(input);
  const t = {
    file: input.rel,
    messages: M.length,
    steps: ends.length,
    triggered: 0,
    applied: 0,
    calls: 0,
    calling_requests: 0,
    chunked_requests: 0,
    folds: 0,
    cached: 0,
    input: 0,
    output: 0,
    fake_input: 0,
    fake_output: 0,
    usage_mismatches: 0,
    max_prompt: 0,
    over_budget_calls: 0,
    not_applied_billed: 0,
    after_over_trigger: 0,
    multiple_summaries: 0,
    errors: [],
    warnings: {},
    reasons: {},
    naive: { steps: 0, calls: 0, input: 0, output: 0, max_prompt: 0 },
    naive_same: { calls: 0, input: 0, output: 0 },
    first_call_check: null,
    final_tokens: { original: 0, kept: 0 },
  };
  const requests = [];
  let kept = [];
  let consumed = 0;
  let firstCallSeen = false;
  for (const end of ends) {
    const history = kept.concat(M.slice(consumed, end));
    consumed = end;
    const body = JSON.stringify({
      ...historyFields(input, history),
      trigger: { tokens: T },
      keep: { messages: KEEP },
      max_input_tokens: MAX_INPUT,
    });
    const before = fake.requests.length;
    const r = await post(`${server.base}/v1/summarize`, body);
    const records = fake.requests.slice(before);
    if (r.status !== 200) {
      t.errors.push({ step: end, status: r.status, body: r.text.slice(0, 400) });
      kept = history;
      continue;
    }
    const res = r.json;
    const u = res.usage;
    const fakeIn = records.reduce((n, x) => n + x.prompt_tokens, 0);
    const fakeOut = records.reduce((n, x) => n + x.completion_tokens, 0);
    if (res.reason !== 'below_trigger') t.triggered++;
    if (res.reason) t.reasons[res.reason] = (t.reasons[res.reason] ?? 0) + 1;
    if (res.applied) t.applied++;
    t.input += u.input_tokens;
    t.output += u.output_tokens;
    t.calls += u.calls;
    t.fake_input += fakeIn;
    t.fake_output += fakeOut;
    if (u.input_tokens !== fakeIn || u.output_tokens !== fakeOut || u.calls !== records.length) t.usage_mismatches++;
    for (const x of records) {
      t.max_prompt = Math.max(t.max_prompt, x.prompt_tokens);
      if (x.prompt_tokens > MAX_INPUT) t.over_budget_calls++;
    }
    if (records.length > 0) t.calling_requests++;
    if (records.length > 1) t.chunked_requests++;
    if (records.some((x) => x.kind === 'fold' || x.kind === 'merge') && res.summary?.parent_id) t.folds++;
    if (res.summary?.cached) t.cached++;
    if (!res.applied && u.calls > 0) t.not_applied_billed++;
    for (const w of res.warnings ?? []) {
      t.warnings[w.code] = (t.warnings[w.code] ?? 0) + 1;
      if (w.code !== 'unsafe_cut_avoided' && (t.warnings[w.code] ?? 0) <= 3) {
        t.errors.push({ step: end, warning: w.code, message: w.message, history_messages: history.length, tokens: res.tokens });
      }
      // The first request that shows each warning, kept to replay it by hand.
      if (w.code !== 'unsafe_cut_avoided' && t.warnings[w.code] === 1 && EXAMPLES) {
        const name = `${EXAMPLES}/${w.code}-T${T}-${input.rel.replace(/[/.]/g, '_')}-step${end}.json`;
        writeFileSync(name, body);
      }
    }
    if (res.applied) {
      const n = (JSON.stringify(res.messages).match(MARKER) ?? []).length;
      if (n !== 1) t.multiple_summaries++;
      if (res.tokens.after >= T) t.after_over_trigger++;
      kept = res.messages;
    } else kept = history;
    if (records.length > 0) {
      const fakeMs = busy(records);
      requests.push({
        step: end,
        calls: records.length,
        kinds: records.map((x) => x.kind).join('+'),
        prompts: records.map((x) => x.prompt_tokens),
        wall_ms: r.ms,
        fake_ms: fakeMs,
        own_ms: r.ms - fakeMs,
        applied: res.applied,
        reason: res.reason ?? null,
        tokens_before: res.tokens.before,
        tokens_after: res.tokens.after,
        covered: res.summary?.covered_messages ?? null,
        role: res.summary?.role ?? null,
        facts: res.summary?.facts ?? null,
        summary_tokens: res.summary ? countTokens(res.summary.text) : null,
      });
    }
    if (naive) {
      const nv = await naiveCall(input, M.slice(0, end));
      if (nv) {
        t.naive.steps++;
        t.naive.calls += nv.calls;
        t.naive.input += nv.input;
        t.naive.output += nv.output;
        t.naive.max_prompt = Math.max(t.naive.max_prompt, nv.input);
        if (records.length > 0) {
          t.naive_same.calls += nv.calls;
          t.naive_same.input += nv.input;
          t.naive_same.output += nv.output;
        }
        // The naive model's first call is the service's first call when the service did not chunk.
        if (!firstCallSeen && records.length === 1 && records[0].kind === 'summary') {
          t.first_call_check = {
            service: records[0].prompt_tokens,
            naive: nv.input,
            reply: [records[0].completion_tokens, nv.output],
          };
        }
      }
      if (records.length > 0) firstCallSeen = true;
    }
  }
  if (naive) {
    const last = await local.run(summarizeStrategy, { ...historyFields(input, M), dry_run: true }, strategyOptions);
    t.final_tokens.original = last.tokens.before;
    t.duplicates = captured ? duplicateShare(captured.entries) : null;
  }
  const lastKept = await local.run(summarizeStrategy, { ...historyFields(input, kept), dry_run: true }, strategyOptions);
  t.final_tokens.kept = lastKept.tokens.before;
  return { totals: t, requests };
}

const compactorEnv = (fake) => ({
  LOG_LEVEL: 'warn',
  COMPACTOR_STORE_URL: 'memory:',
  OPENAI_BASE_URL: fake.url,
  OPENAI_API_KEY: 'x',
  COMPACTOR_SUMMARIZER_MODEL: SUMMARIZER_MODEL,
  COMPACTOR_SUMMARIZER_TIMEOUT_MS: '30000',
  COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
});

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

const meta = {
  date: new Date().toISOString(),
  commit: commit(),
  node: process.version,
  nproc: os.availableParallelism?.() ?? os.cpus().length,
  cpu: os.cpus()[0]?.model ?? '',
  mem_gib: +(os.totalmem() / 2 ** 30).toFixed(1),
  loadavg_start: loadavg(),
  trigger_tokens: T,
  keep_messages: KEEP,
  max_input_tokens: MAX_INPUT,
  overhead_delay_ms: DELAY_MS,
  summarizer_model: SUMMARIZER_MODEL,
  transcripts: CORPUS.length,
};
log(`commit ${meta.commit}, T=${T}, keep ${KEEP} messages, max_input_tokens ${MAX_INPUT}, ${CORPUS.length} transcripts`);

const out = { meta, replay: [], overhead: null };

if (PARTS.includes('r')) {
  const fake = await startFakeLlm({ delayMs: 0 });
  const server = await startServer('compactor', { env: compactorEnv(fake) });
  try {
    for (const input of CORPUS) {
      const t0 = performance.now();
      const { totals, requests } = await replay(server, fake, input);
      totals.seconds = +((performance.now() - t0) / 1000).toFixed(1);
      out.replay.push({ ...totals, requests });
      const ours = totals.input + totals.output;
      const naive = totals.naive.input + totals.naive.output;
      log(
        `${input.rel}: ${totals.steps} steps, ${totals.calls} calls in ${totals.calling_requests} requests, billed ${totals.input}+${totals.output}; naive ${totals.naive.calls} calls ${totals.naive.input}+${totals.naive.output} (${fmt(naive / ours, 2)}x); max prompt ${totals.max_prompt}; ${totals.seconds}s`,
      );
    }
    meta.fake_requests = fake.requests.length;
  } finally {
    await server.stop();
    await fake.stop();
  }
}

if (PARTS.includes('o')) {
  // The transcripts that called the summarizer most in the replay (or a fixed choice without it).
  const ranked = out.replay.length
    ? [...out.replay].sort((a, b) => b.calling_requests - a.calling_requests || a.file.localeCompare(b.file)).map((r) => r.file)
    : [
        'openai/mini-swe-agent-gemini-3-pro__django__django-11138.json',
        'openai/mini-swe-agent-gemini-3-pro__sphinx-doc__sphinx-9258.json',
      ];
  const fake = await startFakeLlm({ delayMs: DELAY_MS });
  const server = await startServer('compactor', { env: compactorEnv(fake) });
  const rows = [];
  const used = [];
  try {
    for (const rel of ranked) {
      if (rows.length >= OVERHEAD_N) break;
      const input = CORPUS.find((c) => c.rel === rel);
      if (!input) continue;
      const { requests } = await replay(server, fake, input, { naive: false });
      used.push(rel);
      rows.push(...requests.map((q) => ({ file: rel, ...q })));
      log(`overhead: ${rel}: ${requests.length} requests with calls (${rows.length} so far)`);
    }
  } finally {
    await server.stop();
    await fake.stop();
  }
  const pct = (q) => (100 * q.own_ms) / q.wall_ms;
  const single = rows.filter((q) => q.calls === 1);
  out.overhead = {
    delay_ms: DELAY_MS,
    transcripts: used,
    requests: rows.length,
    median_wall_ms: median(rows.map((q) => q.wall_ms)),
    median_fake_ms: median(rows.map((q) => q.fake_ms)),
    median_own_ms: median(rows.map((q) => q.own_ms)),
    median_pct: median(rows.map(pct)),
    max_pct: Math.max(...rows.map(pct)),
    single: {
      requests: single.length,
      median_own_ms: median(single.map((q) => q.own_ms)),
      median_pct: median(single.map(pct)),
    },
    chunked: {
      requests: rows.length - single.length,
      median_own_ms: median(rows.filter((q) => q.calls > 1).map((q) => q.own_ms)),
      median_pct: median(rows.filter((q) => q.calls > 1).map(pct)),
    },
    rows,
  };
  log(
    `overhead over ${rows.length} requests: own ${fmt(out.overhead.median_own_ms, 1)} ms of ${fmt(out.overhead.median_wall_ms, 1)} ms = ${fmt(out.overhead.median_pct, 2)}% (median)`,
  );
}

meta.loadavg_end = loadavg();
meta.seconds = +((performance.now() - T0) / 1000).toFixed(1);
const file = process.env.SUMBENCH_OUT ?? `${ROOT}bench/out/summarize-replay-${meta.date.replace(/[:.]/g, '-')}.json`;
mkdirSync(`${ROOT}bench/out`, { recursive: true });
writeFileSync(file, `${JSON.stringify(out, null, 1)}\n`);
printRun(out);
log(`wrote ${file}`);

// ---------------------------------------------------------------------------------------------
// Reports
// ---------------------------------------------------------------------------------------------

function totalsOf(rows) {
  const sum = (f) => rows.reduce((n, r) => n + f(r), 0);
  return {
    calls: sum((r) => r.calls),
    input: sum((r) => r.input),
    output: sum((r) => r.output),
    naive_calls: sum((r) => r.naive.calls),
    naive_input: sum((r) => r.naive.input),
    naive_output: sum((r) => r.naive.output),
    same_input: sum((r) => r.naive_same.input),
    same_output: sum((r) => r.naive_same.output),
    max_prompt: Math.max(0, ...rows.map((r) => r.max_prompt)),
    over_budget: sum((r) => r.over_budget_calls),
    mismatches: sum((r) => r.usage_mismatches),
    errors: sum((r) => r.errors.filter((e) => e.status).length),
  };
}

function printRun(run) {
  if (run.replay.length) {
    const tt = totalsOf(run.replay);
    console.log(`\nT=${run.meta.trigger_tokens}: ${run.replay.length} transcripts`);
    console.log(
      `billed ${tt.input} in + ${tt.output} out in ${tt.calls} calls; naive ${tt.naive_input} + ${tt.naive_output} in ${tt.naive_calls} calls: ${fmt((tt.naive_input + tt.naive_output) / (tt.input + tt.output), 2)}x (same call points: ${fmt((tt.same_input + tt.same_output) / (tt.input + tt.output), 2)}x)`,
    );
    console.log(
      `max prompt seen ${tt.max_prompt} (budget ${run.meta.max_input_tokens}); over budget ${tt.over_budget}; usage mismatches ${tt.mismatches}; HTTP errors ${tt.errors}`,
    );
  }
  if (run.overhead) {
    const o = run.overhead;
    console.log(
      `overhead (${o.requests} requests, fake ${o.delay_ms} ms): ${fmt(o.median_own_ms, 1)} ms, ${fmt(o.median_pct, 2)}% median (max ${fmt(o.max_pct, 2)}%)`,
    );
  }
}

/** Medians across runs, as Markdown (per-transcript table, totals, overhead, goals). */
function combine(files) {
  const runs = files.map((f) => JSON.parse(readFileSync(f, 'utf8')));
  const byT = new Map();
  for (const r of runs) {
    const key = r.meta.trigger_tokens;
    if (!byT.has(key)) byT.set(key, []);
    byT.get(key).push(r);
  }
  const n = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a');
  console.log('| run | date (UTC) | commit | T | transcripts | node | cpus | load start → end | seconds |');
  console.log('|---|---|---|---:|---:|---|---:|---|---:|');
  runs.forEach((r, i) => {
    const m = r.meta;
    console.log(
      `| ${i + 1} | ${m.date} | ${m.commit} | ${m.trigger_tokens} | ${m.transcripts} | ${m.node} | ${m.nproc} | ${(m.loadavg_start ?? []).join(' ')} → ${(m.loadavg_end ?? []).join(' ')} | ${m.seconds} |`,
    );
  });
  for (const [trigger, group] of byT) {
    const withReplay = group.filter((r) => r.replay.length);
    if (withReplay.length) {
      console.log(`\n### T = ${trigger} (${withReplay.length} runs; medians across runs)\n`);
      console.log(
        '| transcript | msgs | steps | over T | requests calling | calls (chunked requests) | billed in | billed out | naive calls | naive in | naive out | ratio | same points ratio | max prompt | warnings |',
      );
      console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
      const files = withReplay[0].replay.map((r) => r.file);
      const med = (file, f) => median(withReplay.map((run) => f(run.replay.find((x) => x.file === file))));
      for (const file of files) {
        const ours = med(file, (r) => r.input + r.output);
        const naive = med(file, (r) => r.naive.input + r.naive.output);
        const same = med(file, (r) => r.naive_same.input + r.naive_same.output);
        const w = withReplay[0].replay.find((x) => x.file === file).warnings;
        console.log(
          `| ${file.replace(/\.json$/, '')} | ${med(file, (r) => r.messages)} | ${med(file, (r) => r.steps)} | ${med(file, (r) => r.triggered)} | ${med(file, (r) => r.calling_requests)} | ${med(file, (r) => r.calls)} (${med(file, (r) => r.chunked_requests)}) | ${n(med(file, (r) => r.input))} | ${n(med(file, (r) => r.output))} | ${med(file, (r) => r.naive.calls)} | ${n(med(file, (r) => r.naive.input))} | ${n(med(file, (r) => r.naive.output))} | ${ours ? `${fmt(naive / ours, 2)}x` : '—'} | ${ours ? `${fmt(same / ours, 2)}x` : '—'} | ${n(med(file, (r) => r.max_prompt))} | ${Object.entries(
            w,
          )
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')} |`,
        );
      }
      const tots = withReplay.map((r) => totalsOf(r.replay));
      const tm = (f) => median(tots.map(f));
      const ours = tm((x) => x.input + x.output);
      console.log(
        `| **total** | | | | | ${n(tm((x) => x.calls))} | ${n(tm((x) => x.input))} | ${n(tm((x) => x.output))} | ${n(tm((x) => x.naive_calls))} | ${n(tm((x) => x.naive_input))} | ${n(tm((x) => x.naive_output))} | **${fmt(tm((x) => x.naive_input + x.naive_output) / ours, 2)}x** | ${fmt(tm((x) => x.same_input + x.same_output) / ours, 2)}x | ${n(tm((x) => x.max_prompt))} | |`,
      );
      console.log(
        `\nper run: ratio ${tots.map((x) => fmt((x.naive_input + x.naive_output) / (x.input + x.output), 3)).join(' / ')}; billed ${tots.map((x) => x.input + x.output).join(' / ')}; max prompt ${tots.map((x) => x.max_prompt).join(' / ')}; over budget ${tots.map((x) => x.over_budget).join(' / ')}; usage mismatches ${tots.map((x) => x.mismatches).join(' / ')}; HTTP errors ${tots.map((x) => x.errors).join(' / ')}`,
      );
    }
    const withOverhead = group.filter((r) => r.overhead);
    if (withOverhead.length) {
      const o = withOverhead.map((r) => r.overhead);
      console.log(`\nOverhead, T = ${trigger}, fake delay ${o[0].delay_ms} ms (runs → median):`);
      const line = (label, f, d = 1) =>
        console.log(`- ${label}: ${o.map((x) => fmt(f(x), d)).join(' / ')} → **${fmt(median(o.map(f)), d)}**`);
      line('requests with calls', (x) => x.requests, 0);
      line('median wall (ms)', (x) => x.median_wall_ms);
      line('median fake time (ms)', (x) => x.median_fake_ms);
      line('median own time (ms)', (x) => x.median_own_ms);
      line('median own share (%)', (x) => x.median_pct, 2);
      line('max own share (%)', (x) => x.max_pct, 2);
      line('single-call requests', (x) => x.single.requests, 0);
      line('single-call median own share (%)', (x) => x.single.median_pct, 2);
      line('chunked requests', (x) => x.chunked.requests, 0);
      line('chunked median own share (%)', (x) => x.chunked.median_pct, 2);
    }
  }
}
