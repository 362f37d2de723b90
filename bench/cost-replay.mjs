/**
 * Cost benchmark (issue: "does a reduction policy lower what an agent pays its provider, prompt
 * caching included?"). Every corpus transcript with at least 20 model calls, plus one long
 * generated run, is replayed call by call as an agent would run it, under a set of reduction
 * policies, and each call is billed as a provider with prompt caching would bill it.
 *
 * The model (what is simulated, and every decision it makes):
 *
 *  - Calls. A transcript's messages are the agent's whole run. A model call happens before each
 *    assistant message: the agent sends its current view and receives that assistant message.
 *    Then the assistant message and every message up to the next assistant message (tool results,
 *    user turns) are appended to the view. Messages after the last assistant message are never
 *    sent. The first call's view is everything before the first assistant message.
 *  - Policies. Before each call the agent may call Compactor; an applied answer's `messages`
 *    replace the view, `applied: false` (or an HTTP error, counted) leaves it:
 *      none               no call;
 *      compact-every      POST /v1/compact on every call, defaults;
 *      compact-5k/-20k    POST /v1/compact on every call with `clear_at_least` 5000 / 20000;
 *      fit-80-50          when the next call's input >= 0.8 × window: POST /v1/fit,
 *                         `target_tokens` 0.5 × window (plus `policy: "tokens"` where the build
 *                         accepts it, so that this fixed policy stays the token-only one);
 *      window-80-50       same trigger: POST /v1/window, `keep: {tokens: 0.5 × window}`;
 *      fit-tokens-every   POST /v1/fit on every call, `target_fraction` 0.6 (the README's
 *                         recommendation, COSTBENCH_FIT_FRACTION), `policy: "tokens"` where the
 *                         build accepts it (probed once: a 400 naming `policy` = not supported);
 *      fit-default-every  POST /v1/fit on every call, `target_fraction` 0.6 (fit requires a target)
 *                         and the defaults, plus
 *                         the cost fields of docs/api.md: `pricing` (the agent's price table below,
 *                         `cache_write` explicit) and `cache: {enabled: true}`; no `horizon`, no
 *                         `limit` (the service's estimator and reserve decide). Where the build
 *                         rejects them (400 naming them) the policy runs without them and is marked
 *                         "(cost fields not supported by this build)".
 *    Every request carries `format`, `model`, `context_window` (the window under test) and, from
 *    the second call on, `usage`: the previous call's usage in the price model's provider field
 *    names (Anthropic: `input_tokens` (0: every uncached token is written), `cache_read_input_tokens`,
 *    `cache_creation_input_tokens`, `output_tokens`; OpenAI Chat: `prompt_tokens`,
 *    `completion_tokens`, `total_tokens`, `prompt_tokens_details.cached_tokens`), with
 *    `messages_covered` = the previous call's view plus its reply.
 *    `model` is COSTBENCH_MODEL (default `gpt-5`) for every run: it only selects the service's
 *    tokenizer, and gpt-5's is o200k_base, exact, the simulated provider's own (a `claude-` or
 *    `gemini-` name would make the service estimate 1.2× or 1.1× what the provider reports;
 *    COSTBENCH_MODEL=meta sends each transcript's own model, for comparison).
 *  - Isolation. The service caches summaries per caller (API key): the same history summarized
 *    again is free. So that one replay's summaries are not free in the next one, the child service
 *    gets COMPACTOR_API_KEYS with one key per (run, window, price model, policy), and each fit
 *    replay sends its own (summaries reused within a replay stay free, as they would for a real
 *    agent; compact and window never summarize and share one key). Keys are named by what the
 *    replay is, so a subset run (COSTBENCH_FILES, COSTBENCH_POLICIES, …) gives the same figures as
 *    the whole run. Artifact ids are keyed by the caller's scope and the service's secret, and the
 *    fake summarizer's reply length (300–600 tokens) is a hash of its prompt, which names artifact
 *    ids: so replays that differ only in their key differ a little, and a fit policy on a long run
 *    can move by ±12% (generated/long, fit-tokens-every, 128k: 3.8M to 4.7M across secrets; corpus
 *    ratios move by 0.01). The child service gets a fixed COMPACTOR_ARTIFACT_SECRET
 *    (COSTBENCH_SECRET), so every figure is the same from one run to the next. With BENCH_URL there
 *    is no such isolation (BENCH_KEY, if set, is sent on every request) and the output says so.
 *  - Tokens. Each message is counted as the service's format adapters count it (the text they
 *    extract: content strings and text parts, reasoning, tool names and arguments, tool-use input
 *    as JSON, tool-result text, anything unknown as its JSON), with gpt-tokenizer's o200k_base,
 *    special-token strings as text, plus a framing of 3 per message; a top-level `system` is
 *    counted as text + 3, `tools` as their JSON text, plus 3 per request. Counts are memoized per
 *    message JSON, so a message the service rewrote is counted anew. At startup one POST
 *    /v1/tokens per run cross-checks this count against the service's (reported, not asserted).
 *    A call's output tokens are the assistant message's count (framing included), the same number
 *    it costs as input on later calls.
 *  - Provider cache. The cache holds the previous call's input only. A call's cached tokens are
 *    the longest common prefix of whole messages (equal JSON text) between its input and the
 *    previous call's, plus system, tools and request framing (which never change) from the second
 *    call on. The first call has nothing cached. The reply of the previous call is not cached.
 *  - Bill of a call (relative units, input price 1): cached × cached price + (input − cached) ×
 *    (cache-write price where the provider has a write premium: every uncached input token is
 *    written to the cache, as with a breakpoint on the last message; else the input price) +
 *    output × output price.
 *      anthropic  input 1, cached read 0.1, cache write 1.25, output 5 (Claude Sonnet 4.x ratios:
 *                 $3 / $0.30 / $3.75 / $15 per million).
 *      openai     input 1, cached 0.1, no write premium, output 8 (gpt-5: $1.25 / $0.125 / $10 per
 *                 million).
 *    Summarizer calls the service makes are billed too: its `usage` (`input_tokens` −
 *    `cached_input_tokens`) × input + `cached_input_tokens` × cached + `output_tokens` × output,
 *    same price table, no write premium (one-off calls). The summarizer is the fake OpenAI-compatible
 *    server of bench/lib/fake-llm.mjs (o200k usage, 300–600-token replies).
 *  - Over the window: a call whose input exceeds the context window (the provider would reject
 *    it). It is counted, reported, and billed as if it went through.
 *  - Runs: every test/fixtures/corpus/{openai,anthropic}/*.json with at least
 *    COSTBENCH_MIN_CALLS (20) model calls, plus `generated/long`: bench/lib/generate.mjs, seed 7,
 *    COSTBENCH_LONG_CALLS (450) tool-call pairs (≈525k tokens in all: 128k overflows after about
 *    110 calls when nothing is done).
 *
 *  - Identical replays. Two policies whose requests are identical at a window and price model (e.g.
 *    fit-default-every falling back to the plain defaults of fit-tokens-every) are replayed once and
 *    share the result (`same_as` in the JSON); `none` is replayed once per run.
 *
 * Output: per (window, price model) a Markdown table, rows = runs, columns = policies, cells = bill
 * in thousands of relative units and `(N over)`; then the summed bill, the summed ratio to `none`
 * (also over the corpus alone, and over the runs `none` never overflows: the generated run weighs
 * more than half of `none`'s sum), the median ratio to `none`, the calls over the window, cache
 * rewrites (calls whose cached prefix is shorter than the previous call's input), requests made and
 * applied, summarizer calls, the summarizer's share of the bill, the service's cost decisions when it
 * reports any, and the share of input that was cache reads under `none`; then the goals for
 * fit-default-every, PASS or FAIL. Raw numbers (per call: input, cached, output, and the
 * summarizer's input, cached, output where it was called) go to bench/out/cost-replay-<commit>.json
 * (bench/out is ignored by git).
 *
 * Usage: npm run build && node bench/cost-replay.mjs          (node bench/cost-replay.mjs --self-check: the accounting check only)
 * Env: COSTBENCH_FILES (regex on "openai/<file>", "anthropic/<file>", "generated/long"; default all),
 *      COSTBENCH_WINDOWS ("32000,128000"), COSTBENCH_PRICES ("anthropic,openai"),
 *      COSTBENCH_POLICIES (comma list, default all; `none` is always run), COSTBENCH_MIN_CALLS (20),
 *      COSTBENCH_LONG_CALLS (450; 0 = no generated run), COSTBENCH_LONG_SCALE (its tool-output size
 *      factor, 0.455 = generate.mjs's default), COSTBENCH_FIT_FRACTION (0.6),
 *      COSTBENCH_MODEL (gpt-5; `meta` = each transcript's model), COSTBENCH_USAGE (1; 0 = send no
 *      `usage`, the service counts everything itself: a diagnostic), COSTBENCH_STATELESS (0; 1 = the
 *      agent keeps its original history and reduces a fresh copy before each call, the reduced view
 *      living for that call only: a diagnostic of the other way to use the service),
 *      COSTBENCH_TRACE (1: every applied answer's call index, occupancy and `cost` object are kept in the
 *      JSON as `trace`, per run and policy: the decisions behind a bill),
 *      COSTBENCH_SECRET (the child service's artifact secret, ≥ 32 characters: another value shows
 *      how much the figures move with the artifact ids alone), COSTBENCH_CONCURRENCY (runs
 *      replayed at once, default 2, at most 2), COSTBENCH_OUT (JSON path), BENCH_URL (an already
 *      running service instead of a child process), BENCH_KEY (its API key), BENCH_COMMIT (commit
 *      of an exported tree without .git).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { billOf, corpusRuns, fixedTokens, makeCounter, overOf, PRICES, replay } from './lib/cost-model.mjs';
import { startFakeLlm, summarizerEnv } from './lib/fake-llm.mjs';
import { generateHistory } from './lib/generate.mjs';
import { commit, loadavg, runMeta } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';
import { median } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

const T0 = performance.now();
/** COSTBENCH_TRACE=1: each applied fit's call, occupancy and `cost` object go to the JSON (`trace`). */
const TRACE = process.env.COSTBENCH_TRACE === '1';
const log = (...args) => console.error(`[${((performance.now() - T0) / 1000).toFixed(1)}s]`, ...args);

// ---------------------------------------------------------------------------------------------
// Self-check: a tiny run computed by hand
// ---------------------------------------------------------------------------------------------

/**
 * Four calls; fixed (system, tools, framing) = 100 tokens; message tokens in `tok`.
 *   history: u1(50) a1(20) t1(200) a2(30) t2(300) a3(40) t3(60) a4(10)
 *   call 1: input 100+50 = 150, cached 0 (nothing before), output a1 = 20.
 *     anthropic: 150×1.25 + 20×5 = 187.5 + 100 = 287.5        openai: 150 + 160 = 310
 *   call 2: view u1 a1 t1: input 370; cached 100 + u1 = 150 (a1 is the previous reply: not cached);
 *     uncached 220; output a2 = 30.
 *     anthropic: 15 + 275 + 150 = 440                          openai: 15 + 220 + 240 = 475
 *   call 3: the stub policy rewrites t1 into t1'(10) and bills a summarizer call of 1000 in + 200 out:
 *     view u1 a1 t1' a2 t2: input 100+50+20+10+30+300 = 510; cached 100+50+20 = 170 (prefix u1 a1,
 *     broken at t1'); uncached 340; output a3 = 40.
 *     anthropic: 17 + 425 + 200 = 642, summarizer 1000 + 1000 = 2000
 *     openai:    17 + 340 + 320 = 677, summarizer 1000 + 1600 = 2600
 *   call 4: no change: view u1 a1 t1' a2 t2 a3 t3: input 610; cached 100 + 410 = 510 (all of call 3's
 *     input); uncached 100; output a4 = 10.
 *     anthropic: 51 + 125 + 50 = 226                           openai: 51 + 100 + 80 = 231
 *   totals: anthropic 287.5 + 440 + 642 + 2000 + 226 = 3595.5; openai 310 + 475 + 677 + 2600 + 231 = 4293.
 *   window 500: calls 3 (510) and 4 (610) are over: 2. Cache reads: (0+150+170+510)/(150+370+510+610) = 830/1640.
 *   usage sent before call 4 (anthropic style): input_tokens 0, cache_creation 340, cache_read 170,
 *   output 40, messages_covered 6 (call 3's view of 5 plus its reply).
 */
async function selfCheck() {
  const m = (role, name) => ({ role, content: name });
  const history = [m('user', 'u1'), m('assistant', 'a1'), m('tool', 't1')];
  history.push(m('assistant', 'a2'), m('tool', 't2'), m('assistant', 'a3'), m('tool', 't3'), m('assistant', 'a4'));
  const tok = { u1: 50, a1: 20, t1: 200, "t1'": 10, a2: 30, t2: 300, a3: 40, t3: 60, a4: 10 };
  const count = (_key, msg) => tok[msg.content];
  const seen = [];
  const reduce = async (view, state) => {
    seen.push(state);
    if (state.call !== 2) return { applied: false, reason: 'below_trigger' };
    const messages = view.map((e) => (e.msg.content === 't1' ? m('tool', "t1'") : e.msg));
    return { applied: true, messages, usage: { input_tokens: 1000, output_tokens: 200, cached_input_tokens: 0, calls: 1 } };
  };
  const { calls, rec } = await replay({ messages: history, fixed: 100, count, reduce, usageStyle: 'anthropic' });
  const a = billOf(calls, PRICES.anthropic);
  const o = billOf(calls, PRICES.openai);
  const checks = [
    ['calls', calls.length, 4],
    ['inputs', calls.map((c) => c.input).join(','), '150,370,510,610'],
    ['cached', calls.map((c) => c.cached).join(','), '0,150,170,510'],
    ['outputs', calls.map((c) => c.output).join(','), '20,30,40,10'],
    ['anthropic bill', a.bill, 3595.5],
    ['openai bill', o.bill, 4293],
    ['over 500', overOf(calls, 500), 2],
    ['cache reads', `${a.cached}/${a.input}`, '830/1640'],
    ['cache breaks', rec.breaks, 1],
    [
      'usage before call 4',
      JSON.stringify(seen[3].usage),
      JSON.stringify({
        input_tokens: 0,
        cache_creation_input_tokens: 340,
        cache_read_input_tokens: 170,
        output_tokens: 40,
        messages_covered: 6,
      }),
    ],
    ['occupancy before call 4', seen[3].occupancy, 610],
  ];
  const failed = checks.filter(([, got, want]) => (typeof want === 'number' ? Math.abs(got - want) > 1e-9 : got !== want));
  for (const [name, got, want] of failed) console.error(`self-check FAILED: ${name}: got ${got}, want ${want}`);
  if (failed.length) process.exit(1);
  log(`self-check passed (${checks.length} hand-computed figures)`);
}

await selfCheck();
if (process.argv.includes('--self-check')) process.exit(0);

// ---------------------------------------------------------------------------------------------
// Options, runs
// ---------------------------------------------------------------------------------------------

const FILES = new RegExp(process.env.COSTBENCH_FILES ?? '.');
const WINDOWS = (process.env.COSTBENCH_WINDOWS ?? '32000,128000').split(',').map(Number);
const PRICE_MODELS = (process.env.COSTBENCH_PRICES ?? 'anthropic,openai').split(',');
const MIN_CALLS = Number(process.env.COSTBENCH_MIN_CALLS ?? 20);
const LONG_CALLS = Number(process.env.COSTBENCH_LONG_CALLS ?? 450);
const LONG_SCALE = Number(process.env.COSTBENCH_LONG_SCALE ?? 0.455);
const FIT_FRACTION = Number(process.env.COSTBENCH_FIT_FRACTION ?? 0.6);
const MODEL = process.env.COSTBENCH_MODEL ?? 'gpt-5';
const SEND_USAGE = process.env.COSTBENCH_USAGE !== '0';
const STATELESS = process.env.COSTBENCH_STATELESS === '1';
const CONCURRENCY = Math.max(1, Math.min(2, Number(process.env.COSTBENCH_CONCURRENCY ?? 2)));
const ALL_POLICIES = [
  'none',
  'compact-every',
  'compact-5k',
  'compact-20k',
  'fit-80-50',
  'window-80-50',
  'fit-tokens-every',
  'fit-default-every',
];
const POLICIES = process.env.COSTBENCH_POLICIES
  ? ['none', ...process.env.COSTBENCH_POLICIES.split(',').filter((p) => p !== 'none')]
  : ALL_POLICIES;
for (const p of POLICIES)
  if (!ALL_POLICIES.includes(p)) throw new Error(`unknown policy ${p} (known: ${ALL_POLICIES.join(', ')})`);
for (const p of PRICE_MODELS) if (!PRICES[p]) throw new Error(`unknown price model ${p}`);

const runs = corpusRuns(CORPUS_DIR, { files: FILES, minCalls: MIN_CALLS, model: MODEL });
if (LONG_CALLS > 0 && FILES.test('generated/long')) {
  const messages = generateHistory({ seed: 7, pairs: LONG_CALLS, scale: LONG_SCALE });
  runs.push({
    name: 'generated/long',
    format: 'openai-chat',
    model: MODEL === 'meta' ? 'gpt-4o' : MODEL,
    messages,
    calls: LONG_CALLS,
  });
}
if (!runs.length) throw new Error('no run matches COSTBENCH_FILES');

// ---------------------------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------------------------

let fake = null;
let server = null;
let base = process.env.BENCH_URL?.replace(/\/$/, '');
/** One API key per replay (and one for the probes), so that no replay reuses another's cached summaries. */
// Named by what the replay is (not by its position), so a subset run (COSTBENCH_FILES, _POLICIES, …)
// gives the same figures as the whole run.
const replayKey = (...parts) => `cb-${createHash('sha1').update(parts.join('\n')).digest('hex').slice(0, 20)}`;
const SHARED_KEY = replayKey('shared');
const KEYS = base
  ? null
  : [
      SHARED_KEY,
      ...runs.flatMap((r) =>
        WINDOWS.flatMap((w) =>
          PRICE_MODELS.flatMap((p) => ALL_POLICIES.filter((pol) => pol !== 'none').map((pol) => replayKey(r.name, w, p, pol))),
        ),
      ),
    ];
const keyOf = (...parts) => (KEYS ? (parts.length ? replayKey(...parts) : SHARED_KEY) : process.env.BENCH_KEY);
if (!base) {
  fake = await startFakeLlm({ delayMs: 0 });
  server = await startServer('compactor', {
    env: {
      COMPACTOR_STORE_URL: 'memory:',
      ...summarizerEnv(fake, {
        keys: KEYS,
        secret: process.env.COSTBENCH_SECRET ?? 'cost-replay-benchmark-fixed-artifact-secret',
      }),
    },
  });
  base = server.base;
}

async function post(path, body, key = keyOf()) {
  const headers = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
  const res = await fetch(`${base}${path}`, { method: 'POST', body, headers });
  const text = await res.text();
  return { status: res.status, text };
}

/** Whether the build's fit accepts these extra fields: true, false (a 400 naming one of them), or throws. */
async function accepts(fields) {
  const body = {
    messages: [{ role: 'user', content: 'hello' }],
    model: MODEL,
    context_window: 32000,
    target_tokens: 1000,
    ...fields,
  };
  const r = await post('/v1/fit', JSON.stringify(body));
  if (r.status === 200) return true;
  if (r.status === 400 && Object.keys(fields).some((f) => new RegExp(`\\b${f}\\b`).test(r.text))) return false;
  throw new Error(`probe of ${Object.keys(fields).join(', ')}: HTTP ${r.status}: ${r.text.slice(0, 300)}`);
}

const priceField = (p) => ({ input: p.input, cached_input: p.cached, cache_write: p.write ?? p.input, output: p.output });
const SUPPORTS = {
  policy: await accepts({ policy: 'tokens' }),
  pricing: await accepts({ pricing: priceField(PRICES.anthropic) }),
  cache: await accepts({ cache: { enabled: true } }),
};
/** The cost fields fit-default-every sends: those the build accepts. */
const COST_FIELDS = (priceModel) => ({
  ...(SUPPORTS.pricing ? { pricing: priceField(PRICES[priceModel]) } : {}),
  ...(SUPPORTS.cache ? { cache: { enabled: true } } : {}),
});
const COST_SUPPORTED = SUPPORTS.pricing;
const NOTES = [];
if (!KEYS)
  NOTES.push(
    'BENCH_URL: every replay shares one caller scope, so a summary cached by one replay is free in the next: summarizer bills after the first replay that summarized a history are understated (see `cached_summaries` in the JSON).',
  );
if (MODEL === 'meta')
  NOTES.push('COSTBENCH_MODEL=meta: each transcript is sent with its own model (the service may estimate its counts).');
if (STATELESS)
  NOTES.push(
    'COSTBENCH_STATELESS=1: the agent keeps its full original history and sends the service a copy before every call (the reduced view is used for that call only, no `usage`).',
  );
if (!SEND_USAGE) NOTES.push('COSTBENCH_USAGE=0: no `usage` sent; the service counts every message itself.');
if (!SUPPORTS.policy)
  NOTES.push('`policy: "tokens"` is not supported by this build (400 naming it): fit-80-50 and fit-tokens-every omit it.');
if (!SUPPORTS.pricing || !SUPPORTS.cache) {
  const missing = ['pricing', 'cache'].filter((f) => !SUPPORTS[f]);
  NOTES.push(
    `fit-default-every: ${missing.map((f) => `\`${f}\``).join(' and ')} rejected by this build (400 naming ${missing.length > 1 ? 'them' : 'it'}): sent without ${missing.length > 1 ? 'them' : 'it'}${SUPPORTS.pricing ? '' : ', i.e. with plain defaults (cost fields not supported by this build)'}.`,
  );
}
log(
  `service ${base}; accepted by fit: ${Object.entries(SUPPORTS)
    .map(([f, ok]) => `${f} ${ok ? 'yes' : 'no'}`)
    .join(', ')}`,
);

/** The request a policy sends at a window and price model (messages and usage added per call), or the trigger. */
function policySpec(run, policy, window, priceModel) {
  const common = { model: run.model, context_window: window };
  const tokensPolicy = SUPPORTS.policy ? { policy: 'tokens' } : {};
  switch (policy) {
    case 'compact-every':
      return { path: '/v1/compact', options: common };
    case 'compact-5k':
      return { path: '/v1/compact', options: { ...common, clear_at_least: 5000 } };
    case 'compact-20k':
      return { path: '/v1/compact', options: { ...common, clear_at_least: 20000 } };
    case 'fit-80-50':
      return {
        path: '/v1/fit',
        when: 0.8 * window,
        options: { ...common, target_tokens: Math.floor(0.5 * window), ...tokensPolicy },
      };
    case 'window-80-50':
      return { path: '/v1/window', when: 0.8 * window, options: { ...common, keep: { tokens: Math.floor(0.5 * window) } } };
    case 'fit-tokens-every':
      return { path: '/v1/fit', options: { ...common, target_fraction: FIT_FRACTION, ...tokensPolicy } };
    case 'fit-default-every':
      return {
        path: '/v1/fit',
        options: {
          ...common,
          target_fraction: FIT_FRACTION,
          ...COST_FIELDS(priceModel),
        },
      };
    default:
      throw new Error(`no spec for ${policy}`);
  }
}

/** What makes two replays the same: the requests they send (the memo's key, and the API key's name). */
function sameOf(run, policy, window, priceModel) {
  const spec = policySpec(run, policy, window, priceModel);
  return `${spec.path}|${spec.when}|${JSON.stringify(spec.options)}|${SEND_USAGE ? priceModel : ''}|${STATELESS}`;
}

/** The first policy (in ALL_POLICIES order) that sends these requests: whose key a shared replay uses. */
const canonical = (run, same, window, priceModel) =>
  ALL_POLICIES.find((pol) => pol !== 'none' && sameOf(run, pol, window, priceModel) === same);

/** A reducer that asks the service, as the policy says. */
function serviceReducer(run, spec, key) {
  return async (view, { occupancy, usage }) => {
    if (spec.when !== undefined && occupancy < spec.when) return null;
    const rest = JSON.stringify({ format: run.format, ...spec.options, ...(usage && SEND_USAGE ? { usage } : {}) });
    const body = `{"messages":[${view.map((e) => e.key).join(',')}],${rest.slice(1)}`;
    const r = await post(spec.path, body, key);
    if (r.status !== 200) return { error: `HTTP ${r.status}: ${r.text.slice(0, 300)}` };
    return JSON.parse(r.text);
  };
}

/** The service's count of a whole run (POST /v1/tokens), against ours. */
async function crossCheck(run, count, fixed) {
  const body = JSON.stringify({
    messages: run.messages,
    format: run.format,
    model: run.model,
    ...(run.system !== undefined ? { system: run.system } : {}),
    ...(run.tools ? { tools: run.tools } : {}),
  });
  const r = await post('/v1/tokens', body);
  const ours = fixed + run.messages.reduce((n, m) => n + count(JSON.stringify(m), m), 0);
  if (r.status !== 200) return { ours, service: null, error: r.text.slice(0, 200) };
  const j = JSON.parse(r.text);
  return { ours, service: j.total, counting: j.counting };
}

// ---------------------------------------------------------------------------------------------
// Run everything
// ---------------------------------------------------------------------------------------------

const meta = {
  ...runMeta(),
  service: process.env.BENCH_URL ? base : 'child process (node dist/server.js, memory: store, fake LLM)',
  windows: WINDOWS,
  price_models: Object.fromEntries(PRICE_MODELS.map((p) => [p, PRICES[p]])),
  policies: POLICIES,
  model: MODEL,
  send_usage: SEND_USAGE,
  stateless: STATELESS,
  fit_fraction: FIT_FRACTION,
  min_calls: MIN_CALLS,
  long_calls: LONG_CALLS,
  long_scale: LONG_SCALE,
  supports: SUPPORTS,
  notes: NOTES,
};
log(
  `commit ${meta.commit}, ${runs.length} runs, windows ${WINDOWS.join('/')}, prices ${PRICE_MODELS.join('/')}, ${POLICIES.length} policies`,
);

/** results[run][`${window}|${price}`][policy] = replay summary. */
const out = { meta, runs: [] };

async function doRun(run) {
  const t0 = performance.now();
  const count = makeCounter(run.format);
  const fixed = fixedTokens(run);
  const check = await crossCheck(run, count, fixed);
  const entry = {
    name: run.name,
    format: run.format,
    calls: run.calls,
    messages: run.messages.length,
    count_check: check,
    cells: {},
  };
  const none = await replay({ messages: run.messages, fixed, count, reduce: null, usageStyle: 'anthropic' });
  const memo = new Map();
  for (const window of WINDOWS) {
    for (const priceModel of PRICE_MODELS) {
      const cell = {};
      for (const policy of POLICIES) {
        // Two policies that send the same requests (e.g. fit-default-every falling back to the plain
        // defaults) replay once: same answers, and no noise from scope-keyed artifact ids.
        const spec = policy === 'none' ? null : policySpec(run, policy, window, priceModel);
        const same = spec && sameOf(run, policy, window, priceModel);
        let r = policy === 'none' ? none : memo.get(same);
        if (!r) {
          r = await replay({
            messages: run.messages,
            fixed,
            count,
            // Only fit can summarize: compact and window replays share the probe's key, so their
            // placeholders name the same artifact ids at every window and price model.
            reduce: serviceReducer(
              run,
              spec,
              spec.path === '/v1/fit' ? keyOf(run.name, window, priceModel, canonical(run, same, window, priceModel)) : keyOf(),
            ),
            usageStyle: priceModel,
            stateless: STATELESS,
            trace: TRACE,
          });
          memo.set(same, r);
        } else if (policy !== 'none') r = { ...r, rec: { ...r.rec, same_as: r.policy } };
        r.policy ??= policy;
        const b = billOf(r.calls, PRICES[priceModel]);
        cell[policy] = {
          ...b,
          over: overOf(r.calls, window),
          max_input: Math.max(...r.calls.map((c) => c.input)),
          ...r.rec,
          per_call: r.calls.map((c) =>
            c.sum ? [c.input, c.cached, c.output, c.sum.input, c.sum.cached, c.sum.output] : [c.input, c.cached, c.output],
          ),
        };
      }
      entry.cells[`${window}|${priceModel}`] = cell;
    }
  }
  entry.seconds = +((performance.now() - t0) / 1000).toFixed(1);
  const diff = check.service ? ((100 * (check.ours - check.service)) / check.service).toFixed(2) : 'n/a';
  log(`${run.name}: ${run.calls} calls, ${entry.seconds}s (our count ${check.ours}, service ${check.service}: ${diff}%)`);
  return entry;
}

try {
  const queue = [...runs].sort((a, b) => b.calls - a.calls);
  const done = new Map();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let run = queue.shift(); run; run = queue.shift()) done.set(run.name, await doRun(run));
    }),
  );
  out.runs = runs.map((r) => done.get(r.name));
} finally {
  if (server) await server.stop();
  if (fake) await fake.stop();
}
meta.loadavg_end = loadavg();
meta.seconds = +((performance.now() - T0) / 1000).toFixed(1);

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const k = (x) => `${Math.round(x / 1000).toLocaleString('en-US')}k`;
const ratio = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : 'n/a');
const label = (p) =>
  p === 'fit-default-every' && !COST_SUPPORTED ? 'fit-default-every (cost fields not supported by this build)' : p;
const goals = [];

console.log(`# Cost replay, commit ${meta.commit} (${meta.date})\n`);
console.log(
  `${runs.length} runs (${runs.filter((r) => r.name !== 'generated/long').length} corpus transcripts with ≥ ${MIN_CALLS} model calls${LONG_CALLS > 0 ? ` + generated/long, ${LONG_CALLS} calls` : ''}); model field \`${MODEL}\`, fit target_fraction ${FIT_FRACTION}. Bills in thousands of relative units (input token = 1).`,
);
for (const n of NOTES) console.log(`\n- ${n}`);

for (const window of WINDOWS) {
  for (const priceModel of PRICE_MODELS) {
    const key = `${window}|${priceModel}`;
    const p = PRICES[priceModel];
    console.log(
      `\n## Window ${window.toLocaleString('en-US')}, ${priceModel}-style prices (input ${p.input}, cached ${p.cached}, write ${p.write ?? 'none'}, output ${p.output})\n`,
    );
    console.log(`| run | calls | ${POLICIES.map(label).join(' | ')} | cache reads (none) |`);
    console.log(`|---|---:|${POLICIES.map(() => '---:').join('|')}|---:|`);
    for (const r of out.runs) {
      const c = r.cells[key];
      const cells = POLICIES.map(
        (pol) =>
          `${k(c[pol].bill)}${c[pol].over ? ` (${c[pol].over} over)` : ''}${c[pol].errors ? ` [${c[pol].errors} err]` : ''}`,
      );
      console.log(`| ${r.name} | ${r.calls} | ${cells.join(' | ')} | ${((100 * c.none.cached) / c.none.input).toFixed(1)}% |`);
    }
    const sum = (pol, f) => out.runs.reduce((n, r) => n + f(r.cells[key][pol]), 0);
    const summed = Object.fromEntries(POLICIES.map((pol) => [pol, sum(pol, (x) => x.bill)]));
    const medians = Object.fromEntries(
      POLICIES.map((pol) => [pol, median(out.runs.map((r) => r.cells[key][pol].bill / r.cells[key].none.bill))]),
    );
    const row = (name, f) => console.log(`| **${name}** | | ${POLICIES.map(f).join(' | ')} | |`);
    row('summed bill', (pol) => k(summed[pol]));
    row('summed ratio to none', (pol) => ratio(summed[pol] / summed.none));
    const corpus = out.runs.filter((r) => r.name !== 'generated/long');
    if (corpus.length && corpus.length < out.runs.length) {
      const cs = (pol) => corpus.reduce((n, r) => n + r.cells[key][pol].bill, 0);
      row('summed ratio, corpus only', (pol) => ratio(cs(pol) / cs('none')));
    }
    const fits = out.runs.filter((r) => r.cells[key].none.over === 0);
    if (fits.length && fits.length < out.runs.length) {
      const fs = (pol) => fits.reduce((n, r) => n + r.cells[key][pol].bill, 0);
      row(`summed ratio, the ${fits.length} runs none fits`, (pol) => ratio(fs(pol) / fs('none')));
    }
    row('median ratio to none', (pol) => ratio(medians[pol]));
    row('calls over the window', (pol) => String(sum(pol, (x) => x.over)));
    row('runs with a call over', (pol) => String(out.runs.filter((r) => r.cells[key][pol].over > 0).length));
    row('cache rewrites', (pol) => String(sum(pol, (x) => x.breaks)));
    row('requests (applied)', (pol) => `${sum(pol, (x) => x.requests)} (${sum(pol, (x) => x.applied)})`);
    row(
      'summarizer calls; cached summaries',
      (pol) => `${sum(pol, (x) => x.summarizer_calls)}; ${sum(pol, (x) => x.cached_summaries)}`,
    );
    row('summarizer share of bill', (pol) => `${((100 * sum(pol, (x) => x.summarizer)) / summed[pol]).toFixed(1)}%`);
    if (out.runs.some((r) => POLICIES.some((pol) => Object.keys(r.cells[key][pol].decisions ?? {}).length))) {
      row('cost decisions', (pol) => {
        const d = {};
        for (const r of out.runs) for (const [n, v] of Object.entries(r.cells[key][pol].decisions ?? {})) d[n] = (d[n] ?? 0) + v;
        return Object.entries(d)
          .map(([n, v]) => `${n} ${v}`)
          .join(', ');
      });
    }
    const reads = sum('none', (x) => x.cached) / sum('none', (x) => x.input);
    const corpusOnly = out.runs.filter((r) => r.name !== 'generated/long');
    const corpusReads =
      corpusOnly.reduce((n, r) => n + r.cells[key].none.cached, 0) / corpusOnly.reduce((n, r) => n + r.cells[key].none.input, 0);
    console.log(
      `\nUnder none, ${(100 * reads).toFixed(1)}% of input tokens were cache reads (corpus only: ${(100 * corpusReads).toFixed(1)}%).`,
    );

    if (POLICIES.includes('fit-default-every')) {
      const fd = 'fit-default-every';
      const others = POLICIES.filter((pol) => pol !== fd);
      const cheapest = others.reduce((a, b) => (summed[b] < summed[a] ? b : a));
      const overRuns = out.runs.filter((r) => r.cells[key][fd].over > 0).map((r) => r.name);
      const safe = out.runs.filter((r) => r.cells[key].none.over === 0);
      const above = safe
        .map((r) => ({ name: r.name, x: r.cells[key][fd].bill / r.cells[key].none.bill }))
        .filter((x) => x.x > 1.02);
      const g = {
        window,
        price_model: priceModel,
        no_overflow: overRuns.length === 0,
        overflow_runs: overRuns,
        cheapest_other: cheapest,
        ratio_to_cheapest: summed[fd] / summed[cheapest],
        at_most_cheapest: summed[fd] <= summed[cheapest],
        stretch_10pct: summed[fd] <= 0.9 * summed[cheapest],
        safe_runs: safe.length,
        runs_over_2pct: above,
      };
      goals.push(g);
      const ok = (b) => (b ? 'PASS' : 'FAIL');
      console.log(`\nGoals for ${label(fd)}:`);
      console.log(
        `- no call over the window on any run: ${ok(g.no_overflow)}${overRuns.length ? ` (over on ${overRuns.join(', ')})` : ''}`,
      );
      console.log(
        `- summed bill ≤ the cheapest other policy (${cheapest}, ${k(summed[cheapest])}): ${ok(g.at_most_cheapest)} (${ratio(g.ratio_to_cheapest)}); stretch, 10% lower: ${ok(g.stretch_10pct)}`,
      );
      console.log(
        `- no run > 2% above none where none never overflows (${safe.length} runs): ${ok(above.length === 0)}${above.length ? ` (${above.map((x) => `${x.name} ${ratio(x.x)}`).join(', ')})` : ''}`,
      );
    }
  }
}

const checks = out.runs.map((r) => r.count_check).filter((c) => c.service);
const worst = Math.max(...checks.map((c) => Math.abs(c.ours - c.service) / c.service));
console.log(
  `\nCounting: our per-message count vs POST /v1/tokens over each whole run: largest difference ${(100 * worst).toFixed(2)}%.`,
);
const mismatches = out.runs.reduce(
  (n, r) =>
    n +
    Object.values(r.cells).reduce(
      (m, c) => m + Object.values(c).reduce((x, y) => x + (y.key_mismatches ?? 0) + (y.errors ?? 0), 0),
      0,
    ),
  0,
);
console.log(`Service errors + kept messages returned with a different JSON text: ${mismatches}.`);
console.log(`Wall time ${meta.seconds} s; load ${meta.loadavg_start.join(' ')} → ${meta.loadavg_end.join(' ')}.`);

out.goals = goals;
const file = process.env.COSTBENCH_OUT ?? `${ROOT}bench/out/cost-replay-${commit()}.json`;
mkdirSync(`${ROOT}bench/out`, { recursive: true });
writeFileSync(file, `${JSON.stringify(out)}\n`);
log(`wrote ${file}`);
