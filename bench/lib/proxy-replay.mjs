/**
 * Part 3 of bench/proxy.mjs: corpus runs replayed call by call as two agents would run them, each
 * against the fake provider (its usage: characters / 4, its prompt-cache simulation) and its own
 * Compactor child with the same configuration (the same API key, artifact secret and fake
 * summarizer answers, so that artifact ids, and summaries, come out the same on both sides):
 *
 *   proxy   keeps its whole history and sends it, grown by each turn, through the proxy
 *           (`COMPACTOR_PROXY_OPTIONS={"context_window": W}`), as Claude Code or Codex would;
 *   direct  keeps fit's history: before each call, `POST /v1/fit` on its view with the fields the
 *           proxy's fit gets (target_fraction 0.5, limit 0.8 of W, format, model, system, tools,
 *           and the usage the fake reported for the previous call, `messages_covered` = that
 *           view plus its reply), then sends the view straight to the fake.
 *
 * Calls are the cost replay's (bench/lib/cost-model.mjs): one before each assistant message, its
 * view what came before; the agent then appends that assistant message and what follows it. Each
 * call is billed with the cost model's `billOf` and `PRICES` from the fake's usage (input,
 * cache reads, output), plus the summarizer calls the fake summarizer answered during the
 * replay (its o200k usage). Prefix breaks are the fake's: a model call whose prompt is not an
 * extension of one of its conversation's earlier prompts (`brokeAtSegment` ≥ 0); the proxy's
 * reductions are its `x-compactor: reduced` answers, the direct agent's fit's `applied`.
 *
 * Env: PROXYBENCH_REPLAY_FILES (regex on "anthropic/<file>", "openai/<file>"; default both
 * Anthropic runs and three long OpenAI Chat runs), PROXYBENCH_WINDOW (32000),
 * PROXYBENCH_REPLAY_BUDGET_MS (unset: the proxy's default COMPACTOR_PROXY_BUDGET_MS).
 */
import { CORPUS_DIR } from './corpus.mjs';
import { billOf, corpusRuns, PRICES } from './cost-model.mjs';
import { startFakeLlm, summarizerEnv } from './fake-llm.mjs';
import { timed } from './proxy-wire.mjs';
import { fmt } from './stats.mjs';

const FILES = new RegExp(
  process.env.PROXYBENCH_REPLAY_FILES ?? '^anthropic/|django-16560|sphinx-doc__sphinx-9258|psf__requests-1142',
);
const WINDOW = Number(process.env.PROXYBENCH_WINDOW ?? 32_000);
const KEY = 'proxy-bench-key-0123456789';
const SECRET = 'proxy-benchmark-fixed-artifact-secret-0123456789';
const MODELS = { anthropic: 'claude-sonnet-4-5', 'openai-chat': 'gpt-5' };

/** The usage the fake reported, in its provider's field names (what the proxy reads from the answer). */
function providerUsage(format, u) {
  if (format === 'anthropic') {
    return {
      input_tokens: Math.max(0, u.input - u.cacheRead - u.cacheWrite),
      cache_creation_input_tokens: u.cacheWrite,
      cache_read_input_tokens: u.cacheRead,
      output_tokens: u.output,
    };
  }
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead },
  };
}

/** A model call's request: path, headers, body (Anthropic Messages or Chat Completions, streaming). */
function modelCall(run, messages, session) {
  const model = MODELS[run.format];
  if (run.format === 'anthropic') {
    const body = { model, max_tokens: 32_000, stream: true, messages };
    if (run.system) body.system = run.system;
    if (run.tools) body.tools = run.tools;
    const headers = {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      'x-api-key': 'sk-ant-bench',
      'x-claude-code-session-id': session,
    };
    return { path: '/v1/messages', prefix: '/anthropic', headers, body };
  }
  const body = { model, stream: true, stream_options: { include_usage: true }, messages };
  if (run.tools) body.tools = run.tools;
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench', 'x-session-id': session };
  return { path: '/v1/chat/completions', prefix: '/openai', headers, body };
}

/** The indices of a run's assistant messages: one model call before each. */
const callsOf = (messages) => messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));

/** The proxy agent: the whole history, grown each turn, through the proxy. Returns each answer's `x-compactor`. */
async function proxyAgent(run, proxy, session) {
  const actions = [];
  for (const a of callsOf(run.messages)) {
    const call = modelCall(run, run.messages.slice(0, a), session);
    const headers = { ...call.headers, 'x-compactor-key': KEY };
    const res = await timed(`${proxy.base}${call.prefix}${call.path}`, headers, Buffer.from(JSON.stringify(call.body)));
    actions.push(res.compactor);
  }
  return { actions };
}

/** The direct agent: fit's history, fit before each call, the view straight to the fake. */
async function directAgent(run, compactor, fake, session) {
  const calls = callsOf(run.messages);
  let view = [];
  let cursor = 0;
  let previous;
  let applied = 0;
  let errors = 0;
  const decisions = {};
  for (const a of calls) {
    view.push(...run.messages.slice(cursor, a));
    cursor = a;
    const request = {
      target_fraction: 0.5,
      limit: { fraction: 0.8 },
      context_window: WINDOW,
      messages: view,
      format: run.format,
      model: MODELS[run.format],
      ...(run.system ? { system: run.system } : {}),
      ...(run.tools ? { tools: run.tools } : {}),
      ...(previous ? { usage: { ...providerUsage(run.format, previous.usage), messages_covered: previous.covered } } : {}),
    };
    const res = await fetch(`${compactor.base}/v1/fit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify(request),
    });
    const answer = await res.json();
    if (res.status !== 200) errors++;
    else if (answer.applied) {
      applied++;
      view = answer.messages;
    }
    const decision = answer.cost?.decision;
    if (decision) decisions[decision] = (decisions[decision] ?? 0) + 1;
    const call = modelCall(run, view, session);
    const since = (await fake.records()).length;
    await timed(`${fake.url}${call.path}`, call.headers, Buffer.from(JSON.stringify(call.body)));
    const [record] = await fake.records(since);
    previous = { usage: record.usage, covered: view.length + 1 };
    view = [...view, run.messages[a]];
    cursor = a + 1;
  }
  return { applied, errors, decisions };
}

/** What one agent's replay cost: the fake's model calls of its conversation, the summarizer's calls. */
function billed(records, summarizer) {
  const model = records.filter((r) => r.endpoint === 'model');
  const calls = model.map((r) => ({ input: r.usage.input, cached: r.usage.cacheRead, output: r.usage.output }));
  const s = summarizer.reduce(
    (t, r) => ({ input: t.input + r.prompt_tokens, cached: 0, output: t.output + r.completion_tokens }),
    { input: 0, cached: 0, output: 0 },
  );
  if (summarizer.length > 0) calls.push({ input: 0, cached: 0, output: 0, sum: s });
  const breaks = model.filter((r, i) => i > 0 && r.cache.brokeAtSegment >= 0).length;
  const bills = Object.fromEntries(Object.keys(PRICES).map((p) => [p, billOf(calls, PRICES[p]).bill]));
  return {
    calls: model.length,
    input: calls.reduce((n, c) => n + c.input, 0),
    breaks,
    summarizer_calls: summarizer.length,
    bills,
  };
}

/** Replays the corpus runs through both agents: per run, both bills, reductions and prefix breaks. */
export async function replayCorpus({ fake, startProxy, log }) {
  const runs = corpusRuns(CORPUS_DIR, { files: FILES });
  const results = [];
  for (const run of runs) {
    const out = { run: run.name, format: run.format, calls: callsOf(run.messages).length };
    for (const side of ['proxy', 'direct']) {
      const llm = await startFakeLlm({ delayMs: 0 });
      const compactor = await startProxy(fake, {
        ...summarizerEnv(llm, { keys: [KEY], secret: SECRET }),
        COMPACTOR_PROXY_OPTIONS: JSON.stringify({ context_window: WINDOW }),
        COMPACTOR_PREPARE: 'off',
        ...(process.env.PROXYBENCH_REPLAY_BUDGET_MS
          ? { COMPACTOR_PROXY_BUDGET_MS: process.env.PROXYBENCH_REPLAY_BUDGET_MS }
          : {}),
      });
      await fake.forget();
      const session = `${side}-${run.name}`;
      const t0 = performance.now();
      const agentOut =
        side === 'proxy' ? await proxyAgent(run, compactor, session) : await directAgent(run, compactor, fake, session);
      const records = await fake.records();
      await compactor.stop();
      await llm.stop();
      const result = { ...billed(records, llm.requests), seconds: (performance.now() - t0) / 1000 };
      if (side === 'proxy') {
        const actions = {};
        for (const a of agentOut.actions) actions[a] = (actions[a] ?? 0) + 1;
        result.actions = actions;
        result.reductions = agentOut.actions.filter((a) => a === 'reduced').length;
      } else {
        result.reductions = agentOut.applied;
        result.errors = agentOut.errors;
        result.decisions = agentOut.decisions;
      }
      out[side] = result;
      log(
        `replay ${run.name} ${side}: ${result.calls} calls, ${result.reductions} reductions, ${result.breaks} breaks, bill ${fmt(result.bills.anthropic / 1000)}k`,
      );
    }
    results.push(out);
  }
  return { window: WINDOW, results };
}

/** The replay's Markdown lines: per run, both bills (anthropic prices), ratios, reductions, breaks; totals. */
export function replayTable(replay) {
  const lines = [
    `Corpus replay, window ${replay.window}: bill in thousands of relative units (the cost replay's PRICES), proxy / direct fit`,
    '',
    '| run | calls | bill proxy (anthropic) | bill direct (anthropic) | ratio | ratio (openai prices) | reductions proxy / direct | prefix breaks proxy / direct | proxy answers |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  ];
  const sum = { proxy: { anthropic: 0, openai: 0 }, direct: { anthropic: 0, openai: 0 } };
  for (const r of replay.results) {
    for (const side of ['proxy', 'direct']) for (const p of ['anthropic', 'openai']) sum[side][p] += r[side].bills[p];
    lines.push(
      `| ${r.run} | ${r.calls} | ${fmt(r.proxy.bills.anthropic / 1000)} | ${fmt(r.direct.bills.anthropic / 1000)} | ${fmt(r.proxy.bills.anthropic / r.direct.bills.anthropic, 4)} | ${fmt(r.proxy.bills.openai / r.direct.bills.openai, 4)} | ${r.proxy.reductions} / ${r.direct.reductions} | ${r.proxy.breaks} / ${r.direct.breaks} | ${JSON.stringify(r.proxy.actions)} |`,
    );
  }
  lines.push(
    `| all | | ${fmt(sum.proxy.anthropic / 1000)} | ${fmt(sum.direct.anthropic / 1000)} | ${fmt(sum.proxy.anthropic / sum.direct.anthropic, 4)} | ${fmt(sum.proxy.openai / sum.direct.openai, 4)} | | | |`,
  );
  return lines;
}
