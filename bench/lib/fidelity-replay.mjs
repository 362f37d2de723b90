/**
 * The fidelity benchmark's replay: one transcript sent call by call through `POST /v1/fit`, as an
 * agent would run it (bench/cost-replay.mjs's call model), then what everything summarized so far
 * (through every fold) left in the final summary, read with the benchmark's own extractor.
 *
 *  - Calls. A model call happens before each assistant message: the agent sends its current view
 *    to fit, an applied answer's `messages` replace the view, then the assistant message and every
 *    message up to the next one are appended. Messages after the last assistant message are never
 *    sent.
 *  - Summarized range. The final view (the last call's, plus its reply) is given to
 *    `POST /v1/expand`, which puts back every summarized range through `previous_id` and every
 *    compacted result, byte-exact: the result must equal the transcript's prefix (checked). The
 *    summary message's place splits it: the messages before it (plus the one it joined, where
 *    roles alternate) are the head, the messages after it the tail, one for one; the range is
 *    what lies between.
 *  - Prepared summaries. Whatever `options.prepare` says is sent (the service's default when
 *    absent). Each response's `prepared` is followed: splices (`prepared.state: spliced` with a
 *    summary; `folded` when the call also called the summarizer, folding the splice), summaries
 *    whose summarizer call was on the request path (`usage.calls` beyond `usage.prepared.calls`),
 *    calls deferred because their summary was being prepared, and the
 *    prepared summaries started (`GET /v1/prepared/{id}` at the end gives what became of them).
 *    The agent's model call takes `agentMs` while a prepared summary is being made (the last
 *    response said `started` or `running`), and no time otherwise: only a summary in the making
 *    depends on wall time, so the run is the one an agent taking `agentMs` per call would see.
 */

const MARKER = '[compactor:summary ';

/** The summary a wire message holds (from its marker on: a joined summary ends its host's text), or undefined. */
function summaryText(message) {
  const c = message?.content;
  const from = (s) => (typeof s === 'string' && s.includes(MARKER) ? s.slice(s.indexOf(MARKER)) : undefined);
  if (typeof c === 'string') return from(c);
  if (Array.isArray(c)) for (const b of c) if (from(b?.text)) return from(b.text);
  return undefined;
}

/** The usage a provider would report for a call: `input` tokens, `cached` of them read, `output`, in the format's field names. */
function providerUsage(format, { input, cached, output, covered }) {
  if (format === 'anthropic')
    return {
      input_tokens: 0,
      cache_creation_input_tokens: input - cached,
      cache_read_input_tokens: cached,
      output_tokens: output,
      messages_covered: covered,
    };
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: input + output,
    prompt_tokens_details: { cached_tokens: cached },
    messages_covered: covered,
  };
}

/** The messages of `prefix` that `whole` (a subsequence of it: what the window left, expanded) lacks; null when it is not one. */
function droppedFrom(prefix, whole) {
  const out = [];
  let k = 0;
  for (const m of prefix) {
    if (k < whole.length && JSON.stringify(whole[k]) === JSON.stringify(m)) k++;
    else out.push(m);
  }
  return k === whole.length ? out : null;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The fit response's part in the prepared-summary counts of `rec`; whether a prepared summary is being made. */
function followPrepared(out, rec, ids) {
  const p = out.prepared;
  if (p?.id) ids.add(p.id);
  const onPath = (out.usage?.calls ?? 0) - (out.usage?.prepared?.calls ?? 0) > 0;
  if (out.applied && out.summary) {
    // A splice the call then folded on the request path (the history still above the target) is `folded`.
    const how = p?.state === 'spliced' ? (onPath ? 'folded' : 'spliced') : onPath ? 'on_path' : 'cached';
    rec.written[how]++;
    rec.last_summary = how;
  }
  if (out.reason === 'summary_being_prepared') rec.deferred++;
  return p?.state === 'started' || p?.state === 'running';
}

/** What became of the prepared summaries `ids`: counts by state. */
async function preparedStates(base, ids) {
  const states = {};
  for (const id of ids) {
    const res = await fetch(`${base}/v1/prepared/${id}`);
    const view = await res.json();
    const s = res.status === 200 ? view.state : `http ${res.status}`;
    states[s] = (states[s] ?? 0) + 1;
  }
  return states;
}

async function post(base, path, body) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = await res.json();
  if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
  return out;
}

/**
 * Replays transcript `t` ({file, format, body: {messages, tools?}}) through fit with `options`
 * (context_window, target_fraction, policy, prepare…; with `withUsage`, each request carries the
 * usage of the previous model call, as a provider caching the previous call's input would report
 * it; `agentMs`: the agent's time per model call while a summary is being prepared); returns the
 * run's counts (model calls, fits applied, summaries written, windows; summaries spliced, made on
 * the request path or found cached, calls deferred, prepared summaries by final state), the final
 * summary's `text`, the wire messages it stands for (`range`), its marker's `covers`, whether
 * the whole final view expanded to the transcript's prefix (`exact`: false when the window stage
 * dropped messages), that expansion (`whole`) and the messages the window dropped (`dropped`);
 * `{skipped}` when no summary is left in the final view.
 */
export async function replayFidelity(base, t, options, { withUsage = options.policy !== 'tokens', agentMs = 0 } = {}) {
  const messages = t.body.messages;
  const assistants = [];
  messages.forEach((m, i) => {
    if (m.role === 'assistant') assistants.push(i);
  });
  const rec = {
    model_calls: assistants.length,
    applied: 0,
    summaries: 0,
    windowed: 0,
    written: { spliced: 0, folded: 0, on_path: 0, cached: 0 },
    last_summary: null,
    deferred: 0,
  };
  const ids = new Set();
  const tools = t.body.tools ? { tools: t.body.tools } : {};
  let view = [];
  let cursor = 0;
  /** The previous model call: its view's messages as JSON, and its usage. */
  let prev = null;
  let making = false;
  for (const a of assistants) {
    for (; cursor < a; cursor++) view.push(messages[cursor]);
    if (making && agentMs > 0) await sleep(agentMs);
    const out = await post(base, '/v1/fit', {
      format: t.format,
      ...options,
      ...(withUsage && prev ? { usage: providerUsage(t.format, prev.usage) } : {}),
      messages: view,
      ...tools,
    });
    making = followPrepared(out, rec, ids);
    if (out.applied) {
      rec.applied++;
      if (out.summary) rec.summaries++;
      if (out.dropped) rec.windowed++;
      view = out.messages;
    }
    view.push(messages[a]);
    cursor = a + 1;
    if (withUsage) {
      // The model call: its input is the view, its output the reply; the provider's cache holds
      // the previous call's input, read up to the first message that differs.
      const counts = await post(base, '/v1/tokens', { format: t.format, model: options.model, messages: view, ...tools });
      const keys = view.map((m) => JSON.stringify(m));
      const output = counts.messages.at(-1);
      const input = counts.total - output;
      let cached = 0;
      if (prev) {
        cached = input - counts.messages.slice(0, -1).reduce((n, c) => n + c, 0);
        for (let i = 0; i < keys.length - 1 && keys[i] === prev.keys[i]; i++) cached += counts.messages[i];
      }
      prev = { keys: keys.slice(0, -1), usage: { input, cached, output, covered: keys.length } };
    }
  }
  rec.prepared = await preparedStates(base, ids);
  const expand = async (list) => (await post(base, '/v1/expand', { format: t.format, messages: list })).messages;
  // The whole view restored: the transcript's prefix, unless the window stage dropped messages.
  const whole = await expand(view);
  const exact = JSON.stringify(whole) === JSON.stringify(messages.slice(0, cursor));
  const dropped = exact ? [] : droppedFrom(messages.slice(0, cursor), whole);
  const at = view.findIndex((m) => summaryText(m) !== undefined);
  if (at < 0) return { skipped: 'no summary', ...rec, exact, whole, dropped };
  const text = summaryText(view[at]);
  // The head and the summary restored: the head, then every summarized range (a summary that
  // joined the head's last message leaves that message as it was).
  const joined = /^\[compactor:summary [^\]\n]*\bjoined/.test(text);
  const range = (await expand(view.slice(0, at + 1))).slice(at + (joined ? 1 : 0));
  const covers = Number(/covers=(\d+)/.exec(text)?.[1] ?? Number.NaN);
  return { ...rec, exact, covers, range, text, whole, dropped };
}
