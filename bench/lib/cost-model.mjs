/**
 * The cost benchmark's model (bench/cost-replay.mjs's header describes it in full), shared by the
 * benchmarks that bill a replay: prices, the bill of replayed calls, the usage a provider would
 * report (message counting is in ./cost-count.mjs), the corpus runs, and the replay of one run call
 * by call under a reducer (the agent's policy: a request to the service, or nothing).
 */
import { readdirSync, readFileSync } from 'node:fs';

export { fixedTokens, makeCounter } from './cost-count.mjs';

// ---------------------------------------------------------------------------------------------
// Prices (relative units: input = 1)
// ---------------------------------------------------------------------------------------------

export const PRICES = {
  anthropic: {
    input: 1,
    cached: 0.1,
    write: 1.25,
    output: 5,
    note: 'Claude Sonnet 4.x ratios ($3 / $0.30 read / $3.75 write / $15)',
  },
  openai: { input: 1, cached: 0.1, write: null, output: 8, note: 'gpt-5 ratios ($1.25 / $0.125 cached / $10), no write premium' },
};

/** The bill of replayed calls under a price table. */
export function billOf(calls, price) {
  const t = { bill: 0, model: 0, summarizer: 0, input: 0, cached: 0, output: 0 };
  for (const c of calls) {
    const model = c.cached * price.cached + (c.input - c.cached) * (price.write ?? price.input) + c.output * price.output;
    const s = c.sum;
    const summ = s ? (s.input - s.cached) * price.input + s.cached * price.cached + s.output * price.output : 0;
    t.model += model;
    t.summarizer += summ;
    t.input += c.input;
    t.cached += c.cached;
    t.output += c.output;
  }
  t.bill = t.model + t.summarizer;
  return t;
}

/** Calls whose input exceeds the window. */
export const overOf = (calls, window) => calls.reduce((n, c) => n + (c.input > window ? 1 : 0), 0);

/** The usage object the provider would have reported for a call, in its field names. */
export function providerUsage(style, call, covered) {
  if (style === 'anthropic') {
    const written = call.input - call.cached;
    return {
      input_tokens: 0,
      cache_creation_input_tokens: written,
      cache_read_input_tokens: call.cached,
      output_tokens: call.output,
      messages_covered: covered,
    };
  }
  return {
    prompt_tokens: call.input,
    completion_tokens: call.output,
    total_tokens: call.input + call.output,
    prompt_tokens_details: { cached_tokens: call.cached },
    messages_covered: covered,
  };
}

// ---------------------------------------------------------------------------------------------
// The replay: one run under one reducer
// ---------------------------------------------------------------------------------------------

/**
 * Replays a run call by call. `reduce(view, state)` is the policy: given the view (array of
 * {key, msg, tokens}) and {call, occupancy, usage} it returns null (no request) or the service's
 * answer {applied, messages?, usage?, ...}. `count(key, msg)` counts one message. Returns the calls
 * (input, cached, output, sum = summarizer usage) and the policy's record (`trace`: each applied
 * answer's call, occupancy and `cost` object in `rec.trace`).
 */
export async function replay({ messages, fixed, count, reduce, usageStyle, stateless = false, trace = false }) {
  const keys = messages.map((m) => JSON.stringify(m));
  const asEntry = (key, msg) => ({ key, msg, tokens: count(key, msg) });
  const assistants = [];
  messages.forEach((m, i) => {
    if (m.role === 'assistant') assistants.push(i);
  });
  const calls = [];
  const rec = {
    requests: 0,
    applied: 0,
    errors: 0,
    reasons: {},
    summarizer_calls: 0,
    cached_summaries: 0,
    decisions: {},
    breaks: 0,
    ms: 0,
    key_mismatches: 0,
  };
  let view = [];
  /** Stateless (a diagnostic): the agent keeps its full original history and reduces a copy for each call. */
  const full = [];
  let cursor = 0;
  let prev = null; // { keys, call }
  for (let k = 0; k < assistants.length; k++) {
    const a = assistants[k];
    for (; cursor < a; cursor++) (stateless ? full : view).push(asEntry(keys[cursor], messages[cursor]));
    if (stateless) view = [...full];
    let sum = null;
    if (reduce) {
      const occupancy = fixed + view.reduce((n, e) => n + e.tokens, 0);
      // (Stateless: the previous call's usage covers a view that is no prefix of the history sent.)
      const usage = prev && !stateless ? providerUsage(usageStyle, prev.call, prev.keys.length + 1) : undefined;
      const t0 = performance.now();
      const res = await reduce(view, { call: k, occupancy, usage });
      if (res) {
        rec.ms += performance.now() - t0;
        rec.requests++;
        if (res.error) {
          rec.errors++;
          rec.last_error = res.error;
        } else {
          if (res.reason) rec.reasons[res.reason] = (rec.reasons[res.reason] ?? 0) + 1;
          if (res.summary?.cached) rec.cached_summaries++;
          if (res.cost?.decision) rec.decisions[res.cost.decision] = (rec.decisions[res.cost.decision] ?? 0) + 1;
          const u = res.usage;
          if (u && (u.calls > 0 || u.input_tokens > 0)) {
            sum = {
              input: u.input_tokens ?? 0,
              cached: u.cached_input_tokens ?? 0,
              output: u.output_tokens ?? 0,
              calls: u.calls ?? 0,
            };
            rec.summarizer_calls += sum.calls;
          }
          if (res.applied) {
            rec.applied++;
            if (trace && res.cost) {
              rec.trace ??= [];
              rec.trace.push({ call: k, occupancy, cost: res.cost });
            }
            const next = res.messages.map((m) => asEntry(typeof m === 'string' ? m : JSON.stringify(m), m));
            // Kept messages must come back as the same JSON text (else the prefix model would break them).
            if (Array.isArray(res.actions)) {
              const after = new Set(next.map((e) => e.key));
              for (const act of res.actions) if (act.action === 'keep' && !after.has(view[act.index]?.key)) rec.key_mismatches++;
            }
            view = next;
          }
        }
      }
    }
    const input = fixed + view.reduce((n, e) => n + e.tokens, 0);
    let cached = 0;
    if (prev) {
      cached = fixed;
      const n = Math.min(prev.keys.length, view.length);
      let i = 0;
      for (; i < n && prev.keys[i] === view[i].key; i++) cached += view[i].tokens;
      if (i < prev.keys.length) rec.breaks++;
    }
    const output = count(keys[a], messages[a]);
    const call = { input, cached, output, ...(sum ? { sum } : {}) };
    calls.push(call);
    prev = { keys: view.map((e) => e.key), call };
    (stateless ? full : view).push(asEntry(keys[a], messages[a]));
    cursor = a + 1;
  }
  return { calls, rec };
}

// ---------------------------------------------------------------------------------------------
// The corpus runs
// ---------------------------------------------------------------------------------------------

const FORMATS = { 'openai-chat-completions': 'openai-chat', 'anthropic-messages': 'anthropic' };

/**
 * The corpus transcripts ({openai,anthropic}/*.json under `dir`) whose "<dir>/<file>" matches
 * `files` and that have at least `minCalls` model calls (assistant messages), as runs:
 * {name, format, model, messages, system, tools, calls}. `model` is the model field sent with
 * every request (`meta`: each transcript's own).
 */
export function corpusRuns(dir, { files = /./, minCalls = 0, model = 'gpt-5' } = {}) {
  const runs = [];
  for (const sub of ['openai', 'anthropic']) {
    for (const f of readdirSync(`${dir}/${sub}`).sort()) {
      const rel = `${sub}/${f}`;
      if (!f.endsWith('.json') || !files.test(rel)) continue;
      const file = JSON.parse(readFileSync(`${dir}/${rel}`, 'utf8'));
      const format = FORMATS[file.format] ?? (sub === 'anthropic' ? 'anthropic' : 'openai-chat');
      const calls = file.messages.filter((m) => m.role === 'assistant').length;
      if (calls < minCalls) continue;
      runs.push({
        name: rel.replace(/\.json$/, ''),
        format,
        model: model === 'meta' ? String(file.meta?.model ?? 'unknown').split(' ')[0] : model,
        messages: file.messages,
        system: file.system,
        tools: file.tools,
        calls,
      });
    }
  }
  return runs;
}
