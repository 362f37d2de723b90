import { asObject, historyOf, systemOf } from '../provider/parse.js';
import type { JsonObject, JsonValue, RecordedRequest, Wire } from '../provider/types.js';
import type { ClientName } from './catalog.js';

/** The endpoints every captured history is posted to, in order. */
export const ENDPOINTS = ['tokens', 'validate', 'window', 'compact', 'summarize', 'fit'] as const;

/** One of `ENDPOINTS`. */
export type EndpointName = (typeof ENDPOINTS)[number];

/**
 * Options small enough that reductions happen on an agent's first few calls: compaction of every
 * old tool result however small, a window and a summary that keep two messages, and fit under
 * `policy: tokens` with a target below what any request holds. Fit's last-resort window keeps
 * every message, so that its output stays reversible (`/v1/expand` restores it; the window
 * endpoint's own dropping is checked on its own).
 */
export const ENDPOINT_OPTIONS: Record<EndpointName, JsonObject> = {
  tokens: {},
  validate: {},
  window: { keep: { messages: 2 } },
  compact: { keep_tool_uses: 0, min_tokens: 1 },
  summarize: { keep: { messages: 2 } },
  fit: {
    target_tokens: 100,
    policy: 'tokens',
    compact: { keep_tool_uses: 0, min_tokens: 1 },
    summarize: { keep: { messages: 2 } },
    window: { keep: { messages: 100_000 } },
  },
};

/** Endpoints whose output `/v1/expand` must turn back into the captured history, byte-exact. */
const REVERSIBLE: ReadonlySet<EndpointName> = new Set(['compact', 'fit']);

/** One captured model request as Compactor is asked about it. */
export interface CapturedHistory {
  client: ClientName;
  version: string;
  /** 1-based position among the run's model calls. */
  request: number;
  format: Wire;
  messages: JsonValue[];
  /** The body's system prompt (`system`, `instructions`, `systemInstruction`), tools and model, as Compactor's fields. */
  context: JsonObject;
}

/** The histories of a run's model requests, each with its body's system prompt, tools and model. */
export function historiesOf(client: ClientName, version: string, requests: readonly RecordedRequest[]): CapturedHistory[] {
  const out: CapturedHistory[] = [];
  for (const [i, r] of requests.entries()) {
    const body = asObject(r.json);
    if (!body || !r.wire) continue;
    const context: JsonObject = {};
    const system = systemOf(r.wire, body);
    if (system !== undefined && system !== null) context.system = system;
    if (Array.isArray(body.tools)) context.tools = body.tools;
    if (typeof body.model === 'string') context.model = body.model;
    out.push({ client, version, request: i + 1, format: r.wire, messages: historyOf(r.wire, body), context });
  }
  return out;
}

/** The verdict on one history at one endpoint: `problems` empty when everything held. */
export interface CheckResult {
  client: ClientName;
  version: string;
  request: number;
  endpoint: EndpointName;
  /** `client@version request N /v1/endpoint`: how assertions and reports name it. */
  label: string;
  ok: boolean;
  /** The endpoint's HTTP status (0 when it could not be reached). */
  status: number;
  /** Whether the endpoint reduced anything (reducing endpoints only). */
  applied?: boolean;
  problems: string[];
}

interface Answer {
  status: number;
  body: JsonObject;
}

async function post(base: string, path: string, body: JsonObject): Promise<Answer> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: JsonValue = null;
  try {
    parsed = JSON.parse(text) as JsonValue;
  } catch {
    parsed = { unparsed: text.slice(0, 200) };
  }
  return { status: res.status, body: asObject(parsed) ?? {} };
}

/** A non-200 answer in one line: status, code and the problem's detail. */
function statusProblem(path: string, answer: Answer): string {
  const { code, detail } = answer.body;
  return `${path}: HTTP ${answer.status}${typeof code === 'string' ? ` ${code}` : ''}: ${typeof detail === 'string' ? detail : JSON.stringify(answer.body).slice(0, 300)}`;
}

function violations(body: JsonObject): string {
  const list = Array.isArray(body.violations) ? body.violations : [];
  return list
    .slice(0, 3)
    .map((v) => {
      const o = asObject(v) ?? {};
      return `messages[${String(o.index)}] ${String(o.rule)}: ${String(o.message)}`;
    })
    .join('; ');
}

/** Every message whose action is `keep` must be in the output, in order, as the same JSON text. */
export function keptProblems(input: readonly JsonValue[], output: readonly JsonValue[], actions: readonly JsonValue[]): string[] {
  const problems: string[] = [];
  if (actions.length !== input.length) problems.push(`actions has ${actions.length} entries for ${input.length} messages`);
  const texts = output.map((m) => JSON.stringify(m));
  let next = 0;
  for (const raw of actions) {
    const action = asObject(raw);
    if (action?.action !== 'keep' || typeof action.index !== 'number') continue;
    const want = JSON.stringify(input[action.index]);
    const at = texts.indexOf(want, next);
    if (at === -1) problems.push(`messages[${action.index}] has action keep but is not in the output byte-identical`);
    else next = at + 1;
  }
  return problems;
}

/** Where two histories first differ, or undefined when they are the same JSON text. */
export function firstDifference(expected: readonly JsonValue[], actual: readonly JsonValue[]): string | undefined {
  if (JSON.stringify(expected) === JSON.stringify(actual)) return undefined;
  const n = Math.max(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    if (JSON.stringify(expected[i]) !== JSON.stringify(actual[i]))
      return `messages[${i}] differs (${expected.length} messages expected, ${actual.length} returned)`;
  }
  return 'the histories differ';
}

/** Posts a history to one endpoint and checks its answer: 200, a valid output, kept messages intact, expand exact. */
async function checkOne(base: string, h: CapturedHistory, endpoint: EndpointName): Promise<CheckResult> {
  const path = `/v1/${endpoint}`;
  const label = `${h.client}@${h.version} request ${h.request} ${path}`;
  const result: CheckResult = {
    client: h.client,
    version: h.version,
    request: h.request,
    endpoint,
    label,
    ok: false,
    status: 0,
    problems: [],
  };
  const request = { format: h.format, messages: h.messages, ...h.context };
  const answer = await post(base, path, { ...request, ...ENDPOINT_OPTIONS[endpoint] });
  result.status = answer.status;
  if (answer.status !== 200) result.problems.push(statusProblem(path, answer));
  else if (endpoint === 'validate') {
    if (answer.body.valid !== true) result.problems.push(`the captured history is not valid: ${violations(answer.body)}`);
  } else if (endpoint !== 'tokens') {
    result.applied = answer.body.applied === true;
    const output = Array.isArray(answer.body.messages) ? answer.body.messages : [];
    const check = await post(base, '/v1/validate', { ...request, messages: output });
    if (check.status !== 200) result.problems.push(`output ${statusProblem('/v1/validate', check)}`);
    else if (check.body.valid !== true) result.problems.push(`the output is not valid: ${violations(check.body)}`);
    result.problems.push(...keptProblems(h.messages, output, Array.isArray(answer.body.actions) ? answer.body.actions : []));
    if (REVERSIBLE.has(endpoint)) {
      const expanded = await post(base, '/v1/expand', { format: h.format, messages: output });
      if (expanded.status !== 200) result.problems.push(statusProblem('/v1/expand', expanded));
      else {
        const missing = Array.isArray(expanded.body.missing) ? expanded.body.missing : [];
        if (missing.length > 0) result.problems.push(`/v1/expand: missing ${JSON.stringify(missing)}`);
        const back = Array.isArray(expanded.body.messages) ? expanded.body.messages : [];
        const difference = firstDifference(h.messages, back);
        if (difference) result.problems.push(`/v1/expand is not the captured history: ${difference}`);
      }
    }
  }
  result.ok = result.problems.length === 0;
  return result;
}

/** Posts a captured history to every endpoint of a listening Compactor at `base` and checks each answer. */
export async function checkHistory(base: string, h: CapturedHistory): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const endpoint of ENDPOINTS) results.push(await checkOne(base, h, endpoint));
  return results;
}
