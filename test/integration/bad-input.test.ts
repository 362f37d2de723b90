/**
 * Malformed input through the real app (`inject()`): every rejection is an RFC 9457 problem with
 * the exact 4xx status, the stable `CMP_ERR_…` code and, when a field is at fault, `errors[0].path`
 * naming it. Never a 500, and the same app keeps serving afterwards. `/v1/validate` answers 200 with
 * violations for histories that parse but break a structural rule (docs/strategies.md, "What every output guarantees").
 */
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import t, { type Test } from 'tap';
import { ERRORS, type ErrorCode } from '../../src/errors.js';
import { build } from '../support/app.js';

const W = '/v1/window';
const T = '/v1/tokens';
const V = '/v1/validate';

// ---------------------------------------------------------------------------------------------
// Fixtures: small but realistic histories in both formats.

const SYS = { role: 'system', content: 'You are a coding agent. Use the tools to inspect the repository.' };
const USER = { role: 'user', content: 'Fix the failing test in src/app.ts' };
const USER2 = { role: 'user', content: 'Also update the README.' };
const CALL = {
  role: 'assistant',
  content: null,
  tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/app.ts"}' } }],
};
const RESULT = { role: 'tool', tool_call_id: 'call_1', content: 'export const answer = 41;' };
const ANSWER = { role: 'assistant', content: 'The constant was off by one; fixed.' };

const A_USER = { role: 'user', content: [{ type: 'text', text: 'List the files in the repository.' }] };
const A_CALL = {
  role: 'assistant',
  content: [
    { type: 'text', text: 'Listing them.' },
    { type: 'tool_use', id: 'toolu_1', name: 'ls', input: { path: '.' } },
  ],
};
const A_RESULT = { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.ts\nb.ts' }] };
const A_ANSWER = { role: 'assistant', content: [{ type: 'text', text: 'There are two files.' }] };

const OAI = [SYS, USER, CALL, RESULT, ANSWER];
const ANTH = [A_USER, A_CALL, A_RESULT, A_ANSWER];

/** `'['.repeat(n) + ']'.repeat(n)`: an array nested n levels deep, as raw JSON text. */
const deepArray = (n: number): string => `${'['.repeat(n)}${']'.repeat(n)}`;
/** `{"a":{"a":…1…}}` nested n levels deep, as raw JSON text. */
const deepObject = (n: number): string => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
const json = (value: unknown): string => JSON.stringify(value);
const DEPTH = 100_000;

// ---------------------------------------------------------------------------------------------
// The problem-document check every case runs.

interface Expect {
  status: number | readonly number[];
  code: ErrorCode | readonly ErrorCode[];
  /** `errors[0].path` exactly. */
  path?: string;
  /** `errors[0].path` starts with this (when the exact sub-path is the service's choice). */
  pathPrefix?: string;
  /** Every one of these appears among the `errors` paths (several rules broken at once). */
  paths?: readonly string[];
}

const list = <X>(x: X | readonly X[]): readonly X[] => (Array.isArray(x) ? x : [x as X]);

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function parseBody(res: LightMyRequestResponse): Record<string, unknown> {
  try {
    return asRecord(JSON.parse(res.body));
  } catch {
    return {};
  }
}

/** Asserts `res` is a problem+json document for one of the expected statuses and codes. */
function expectProblem(t: Test, res: LightMyRequestResponse, expect: Expect): void {
  const statuses = list(expect.status);
  const codes = list(expect.code);
  t.ok(statuses.includes(res.statusCode), `status ${res.statusCode} is one of ${statuses.join('|')}`, {
    body: res.body.slice(0, 400),
  });
  t.ok(res.statusCode >= 400 && res.statusCode < 500, `4xx, never a 5xx (got ${res.statusCode})`);
  t.match(String(res.headers['content-type']), /^application\/problem\+json/, 'content-type is application/problem+json');
  const body = parseBody(res);
  t.type(body.type, 'string', 'type');
  t.ok(String(body.type ?? '').length > 0, 'type is not empty');
  t.type(body.title, 'string', 'title');
  t.equal(body.status, res.statusCode, 'body status equals the HTTP status');
  t.type(body.detail, 'string', 'detail');
  t.ok(String(body.detail ?? '').length > 0, 'detail is not empty');
  t.ok(codes.includes(body.code as ErrorCode), `code ${String(body.code)} is one of ${codes.join('|')}`);
  const code = body.code as ErrorCode;
  if (typeof code === 'string' && code in ERRORS) {
    t.equal(ERRORS[code].status, res.statusCode, 'the code is catalogued with this status');
    t.equal(body.title, ERRORS[code].title, 'title is the catalogued title');
  }
  t.type(body.request_id, 'string', 'request_id');
  t.equal(body.request_id, res.headers['x-request-id'], 'request_id equals the x-request-id header');
  if (expect.path !== undefined || expect.pathPrefix !== undefined || expect.paths !== undefined) {
    const errors = Array.isArray(body.errors) ? body.errors : [];
    const paths = errors.map((e) => asRecord(e).path);
    t.ok(errors.length > 0, 'errors lists the offending field');
    for (const p of expect.paths ?? []) t.ok(paths.includes(p), `errors names ${p}`, { paths });
    const first = asRecord(errors[0]);
    t.type(first.message, 'string', 'errors[0].message');
    if (expect.pathPrefix !== undefined) {
      t.ok(
        String(first.path).startsWith(expect.pathPrefix),
        `errors[0].path ${String(first.path)} is under ${expect.pathPrefix}`,
      );
    }
    if (expect.path !== undefined) {
      t.equal(first.path, expect.path, `errors[0].path is ${expect.path}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The table.

interface Case extends Expect {
  name: string;
  method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  /** An object is sent as JSON; a string is sent raw (content-type application/json unless `headers` say otherwise). */
  payload?: unknown;
  headers?: Record<string, string>;
}

const JSON_CT = { 'content-type': 'application/json' };

const cases: Case[] = [
  // --- request schema: wrong types, missing fields, unknown fields (CMP_ERR_REQUEST_VALIDATION) ---
  {
    name: 'messages is a string',
    url: W,
    payload: { messages: 'hello' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'messages',
  },
  {
    name: 'messages is an object',
    url: T,
    payload: { messages: { 0: USER } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'messages',
  },
  {
    name: 'messages is empty',
    url: V,
    payload: { messages: [] },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'messages',
  },
  {
    name: 'messages is empty (window)',
    url: W,
    payload: { messages: [] },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'messages',
  },
  {
    name: 'no messages at all',
    url: T,
    payload: { model: 'gpt-4o' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'messages',
  },
  {
    name: 'no messages, only keep',
    url: W,
    payload: { keep: { runs: 2 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'messages',
  },
  {
    name: 'keep is a string',
    url: W,
    payload: { messages: OAI, keep: '3' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep',
  },
  {
    name: 'keep has two keys',
    url: W,
    payload: { messages: OAI, keep: { runs: 1, messages: 2 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep',
  },
  {
    name: 'keep is empty',
    url: W,
    payload: { messages: OAI, keep: {} },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep',
  },
  {
    name: 'keep.runs is negative',
    url: W,
    payload: { messages: OAI, keep: { runs: -1 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep.runs',
  },
  {
    name: 'keep.messages is not an integer',
    url: W,
    payload: { messages: OAI, keep: { messages: 2.5 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep.messages',
  },
  {
    name: 'keep.tokens is a numeric string',
    url: W,
    payload: { messages: OAI, keep: { tokens: '1000' } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep.tokens',
  },
  {
    name: 'keep.runs overflows to Infinity',
    url: W,
    payload: `{"messages":${json(OAI)},"keep":{"runs":1e400}}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep.runs',
  },
  {
    name: 'keep has an unknown key',
    url: W,
    payload: { messages: OAI, keep: { turns: 2 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    pathPrefix: 'keep',
  },
  {
    name: 'keep_first_user is a string',
    url: W,
    payload: { messages: OAI, keep_first_user: 'yes' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep_first_user',
  },
  {
    name: 'dry_run is a string',
    url: W,
    payload: { messages: OAI, dry_run: 'false' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'dry_run',
  },
  {
    name: 'unknown top-level field',
    url: W,
    payload: { messages: OAI, compress: true },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'compress',
  },
  {
    name: 'a window option sent to /v1/tokens',
    url: T,
    payload: { messages: OAI, keep: { runs: 1 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'keep',
  },
  {
    name: 'dry_run sent to /v1/validate (not one of its fields)',
    url: V,
    payload: { messages: OAI, dry_run: true },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
  },
  {
    name: 'format not in the enum',
    url: W,
    payload: { messages: OAI, format: 'gemini-v9' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'format',
  },
  {
    name: 'format in the wrong case',
    url: V,
    payload: { messages: OAI, format: 'OpenAI-Chat' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'format',
  },
  {
    name: 'format is a number',
    url: T,
    payload: { messages: OAI, format: 1 },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'format',
  },
  {
    name: 'context_window is 0',
    url: W,
    payload: { messages: OAI, context_window: 0 },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'context_window',
  },
  {
    name: 'context_window is negative',
    url: T,
    payload: { messages: OAI, context_window: -128000 },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'context_window',
  },
  {
    name: 'context_window is not an integer',
    url: T,
    payload: { messages: OAI, context_window: 1000.5 },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'context_window',
  },
  {
    name: 'model is empty',
    url: V,
    payload: { messages: OAI, model: '' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'model',
  },
  {
    name: 'model is 300 chars',
    url: T,
    payload: { messages: OAI, model: 'm'.repeat(300) },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'model',
  },
  {
    name: 'run_ids holds numbers',
    url: W,
    payload: { messages: OAI, run_ids: [1, 1, 1, 1, 1] },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'run_ids[0]',
  },
  {
    name: 'run_ids is a string',
    url: T,
    payload: { messages: OAI, run_ids: 'r1' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'run_ids',
  },
  {
    name: 'usage is a string',
    url: W,
    payload: { messages: OAI, usage: '1200' },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'usage',
  },
  {
    name: 'usage.messages_covered is negative',
    url: T,
    payload: { messages: OAI, usage: { total_tokens: 500, messages_covered: -1 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'usage.messages_covered',
  },
  {
    name: 'trigger is empty',
    url: W,
    payload: { messages: OAI, trigger: {} },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'trigger',
  },
  {
    name: 'trigger.fraction above 1',
    url: W,
    payload: { messages: OAI, trigger: { fraction: 1.5 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'trigger.fraction',
  },
  {
    name: 'trigger.tokens is negative',
    url: W,
    payload: { messages: OAI, trigger: { tokens: -10 } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'trigger.tokens',
  },
  {
    name: 'system is a number',
    url: T,
    payload: { messages: ANTH, system: 42 },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'system',
  },
  {
    name: 'tools is an object',
    url: V,
    payload: { messages: OAI, tools: { read_file: {} } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'tools',
  },
  { name: 'body is a JSON array', url: T, payload: json(OAI), status: 400, code: 'CMP_ERR_REQUEST_VALIDATION' },
  { name: 'body is JSON null', url: V, payload: 'null', status: 400, code: 'CMP_ERR_REQUEST_VALIDATION' },
  { name: 'body is a JSON string', url: W, payload: '"summarize this"', status: 400, code: 'CMP_ERR_REQUEST_VALIDATION' },

  // --- messages malformed for their format (CMP_ERR_HISTORY_MALFORMED) ---
  {
    name: 'tool message without tool_call_id',
    url: W,
    payload: { messages: [USER, CALL, { role: 'tool', content: 'export const answer = 41;' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[2].tool_call_id',
  },
  {
    name: 'tool message with a numeric tool_call_id',
    url: V,
    payload: { messages: [USER, CALL, { role: 'tool', tool_call_id: 1, content: 'x' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[2].tool_call_id',
  },
  {
    name: 'anthropic tool_use without id',
    url: T,
    payload: { messages: [A_USER, { role: 'assistant', content: [{ type: 'tool_use', name: 'ls', input: {} }] }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].content[0].id',
  },
  {
    name: 'thinking block without signature',
    url: V,
    payload: {
      messages: [
        A_USER,
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants a listing.' },
            { type: 'text', text: 'Sure.' },
          ],
        },
      ],
    },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].content[0].signature',
  },
  {
    name: 'tool_calls[0].function.arguments is an object',
    url: W,
    payload: {
      messages: [
        USER,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: {} } }],
        },
        RESULT,
      ],
    },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].tool_calls[0].function.arguments',
  },
  {
    name: 'unknown role "robot"',
    url: W,
    payload: { messages: [USER, { role: 'robot', content: 'beep' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].role',
  },
  {
    name: 'unknown role "model" (Gemini)',
    url: T,
    payload: { messages: [USER, { role: 'model', content: 'hello' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].role',
  },
  {
    name: 'unknown role on /v1/validate is still a 400',
    url: V,
    payload: { messages: [SYS, USER, { role: 'narrator', content: 'meanwhile' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[2].role',
  },
  {
    name: 'role missing',
    url: W,
    payload: { messages: [USER, { content: 'who am I' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].role',
  },
  {
    name: 'a role the Messages API does not have, in an anthropic history',
    url: V,
    payload: { format: 'anthropic', messages: [A_USER, A_ANSWER, { role: 'developer', content: 'Be brief.' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[2].role',
  },
  {
    name: 'a "system" message first in an anthropic history (its place is the top-level system, or after a user turn)',
    url: W,
    payload: { format: 'anthropic', messages: [{ role: 'system', content: 'Be brief.' }, ...ANTH] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[0]',
  },
  {
    name: 'a "system" message before a user turn in an anthropic history',
    url: W,
    payload: { format: 'anthropic', messages: [A_USER, { role: 'system', content: 'Be brief.' }, A_USER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[2]',
  },
  {
    name: 'anthropic tool_result inside an assistant message',
    url: T,
    payload: {
      messages: [A_USER, { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] }],
    },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].content[0].type',
  },
  {
    name: 'format openai-chat forced on anthropic blocks',
    url: V,
    payload: { format: 'openai-chat', messages: ANTH },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].content[1].type',
  },
  {
    name: 'format anthropic forced on an openai tool call',
    url: W,
    payload: { format: 'anthropic', messages: [USER, CALL, RESULT] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1].content',
  },
  {
    name: 'a message is a string',
    url: W,
    payload: { messages: [USER, 'hello'] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1]',
  },
  {
    name: 'a message is a number',
    url: T,
    payload: { messages: [USER, ANSWER, 7] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[2]',
  },
  {
    name: 'a message is null',
    url: V,
    payload: { messages: [null] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[0]',
  },
  {
    name: 'a message is an array',
    url: W,
    payload: { messages: [USER, [ANSWER]] },
    status: 400,
    code: 'CMP_ERR_HISTORY_MALFORMED',
    path: 'messages[1]',
  },

  // --- structural rules (CMP_ERR_HISTORY_STRUCTURE on the strategy and counting endpoints) ---
  {
    name: 'orphan tool message (no preceding call)',
    url: W,
    payload: { messages: [SYS, USER, RESULT, ANSWER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[2]',
  },
  {
    name: 'anthropic tool_result whose tool_use is missing',
    url: T,
    payload: { messages: [A_USER, A_ANSWER, A_RESULT] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[2]',
  },
  {
    name: 'tool result with a mismatched id',
    url: W,
    payload: { messages: [USER, CALL, { ...RESULT, tool_call_id: 'call_999' }, ANSWER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    // the call at [1] is unanswered and the result at [2] is an orphan; errors are in message order
    path: 'messages[1]',
    paths: ['messages[1]', 'messages[2]'],
  },
  {
    name: 'anthropic tool_result with a mismatched id',
    url: W,
    payload: {
      messages: [
        A_USER,
        A_CALL,
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_999', content: 'x' }] },
        A_ANSWER,
      ],
    },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[1]',
    paths: ['messages[1]', 'messages[2]'],
  },
  {
    name: 'unanswered tool call followed by more messages',
    url: T,
    payload: { messages: [SYS, USER, CALL, USER2, ANSWER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[2]',
  },
  {
    name: 'a tool call answered twice',
    url: W,
    payload: { messages: [USER, CALL, RESULT, RESULT, ANSWER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[3]',
  },
  {
    name: 'legacy function result without a function_call',
    url: T,
    payload: { messages: [USER, { role: 'function', name: 'read_file', content: 'x' }] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[1]',
  },
  {
    name: 'anthropic roles not alternating',
    url: W,
    payload: { messages: [...ANTH, A_ANSWER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[4]',
  },
  {
    name: 'anthropic history starting with assistant',
    url: T,
    payload: { messages: [A_ANSWER, ...ANTH] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[0]',
  },
  {
    name: 'empty assistant message mid-history',
    url: W,
    payload: { messages: [USER, { role: 'assistant', content: '' }, USER2, ANSWER] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[1]',
  },

  // --- format detection (CMP_ERR_FORMAT_MIXED) ---
  {
    name: 'anthropic tool_use then an openai tool message',
    url: W,
    payload: {
      messages: [USER, { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'ls', input: {} }] }, RESULT],
    },
    status: 400,
    code: 'CMP_ERR_FORMAT_MIXED',
    path: 'messages[2]',
  },
  {
    // Anthropic takes system messages inside `messages` too, but only after a user turn.
    name: 'anthropic history followed by a system message after its last answer',
    url: T,
    payload: { messages: [...ANTH, SYS] },
    status: 400,
    code: 'CMP_ERR_HISTORY_STRUCTURE',
    path: 'messages[4]',
  },
  {
    name: 'anthropic image then openai image_url',
    url: V,
    payload: {
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] },
        { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
      ],
    },
    status: 400,
    code: 'CMP_ERR_FORMAT_MIXED',
    path: 'messages[1]',
  },

  // --- options that do not fit the history (CMP_ERR_OPTIONS_INVALID) ---
  {
    name: 'run_ids longer than messages',
    url: W,
    payload: { messages: OAI, run_ids: ['r1', 'r1', 'r1', 'r1', 'r1', 'r2'] },
    status: 400,
    code: 'CMP_ERR_OPTIONS_INVALID',
    path: 'run_ids',
  },
  {
    name: 'run_ids shorter than messages',
    url: T,
    payload: { messages: OAI, run_ids: ['r1'] },
    status: 400,
    code: 'CMP_ERR_OPTIONS_INVALID',
    path: 'run_ids',
  },
  {
    name: 'usage.messages_covered beyond the history',
    url: W,
    payload: { messages: OAI, usage: { prompt_tokens: 900, completion_tokens: 40, total_tokens: 940, messages_covered: 6 } },
    status: 400,
    code: 'CMP_ERR_OPTIONS_INVALID',
    path: 'usage.messages_covered',
  },
  {
    name: 'usage with no recognizable totals',
    url: T,
    payload: { messages: OAI, usage: { tokens_used: 940 } },
    status: 400,
    code: 'CMP_ERR_OPTIONS_INVALID',
    path: 'usage',
  },
  {
    name: 'usage total as a string',
    url: W,
    payload: { messages: OAI, usage: { total_tokens: '940' } },
    status: 400,
    code: 'CMP_ERR_REQUEST_VALIDATION',
    path: 'usage.total_tokens',
  },
  {
    name: 'trigger.fraction with an unknown model and no context_window',
    url: W,
    payload: { messages: OAI, model: 'acme-llm-7b', trigger: { fraction: 0.8 } },
    status: 400,
    code: 'CMP_ERR_OPTIONS_INVALID',
    path: 'trigger.fraction',
  },

  // --- the body itself ---
  { name: 'invalid JSON', url: W, payload: '{bad', status: 400, code: 'CMP_ERR_REQUEST_INVALID_JSON' },
  { name: 'truncated JSON', url: V, payload: '{"messages":[{"role":"user"', status: 400, code: 'CMP_ERR_REQUEST_INVALID_JSON' },
  {
    name: 'trailing garbage after JSON',
    url: T,
    payload: `{"messages":${json(OAI)}} x`,
    status: 400,
    code: 'CMP_ERR_REQUEST_INVALID_JSON',
  },
  { name: 'empty body', url: W, payload: '', status: 400, code: 'CMP_ERR_REQUEST_EMPTY_BODY' },
  { name: 'whitespace-only body', url: T, payload: '  \n ', status: 400, code: 'CMP_ERR_REQUEST_EMPTY_BODY' },
  {
    name: 'text/plain body',
    url: W,
    payload: json({ messages: OAI }),
    headers: { 'content-type': 'text/plain' },
    status: 415,
    code: 'CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'form-encoded body',
    url: V,
    payload: 'messages=hello',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    status: 415,
    code: 'CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'octet-stream body',
    url: T,
    payload: json({ messages: OAI }),
    headers: { 'content-type': 'application/octet-stream' },
    status: 415,
    code: 'CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: 'no content-type at all',
    url: W,
    payload: json({ messages: OAI }),
    headers: {},
    status: 415,
    code: 'CMP_ERR_REQUEST_UNSUPPORTED_MEDIA_TYPE',
  },
  {
    name: '__proto__ at the top level',
    url: W,
    payload: `{"messages":${json(OAI)},"__proto__":{"polluted":true}}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
  },
  {
    name: '__proto__ inside a message',
    url: T,
    payload: `{"messages":[{"role":"user","content":"hi","__proto__":{"polluted":true}}]}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
  },
  {
    name: '__proto__ inside a content block',
    url: V,
    payload: `{"messages":[{"role":"user","content":[{"type":"text","text":"hi","__proto__":{"polluted":true}}]}]}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
  },
  {
    name: '__proto__ spelled with a unicode escape',
    url: W,
    payload: `{"messages":${json(OAI)},"\\u005f_proto__":{"polluted":true}}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
  },
  {
    name: 'constructor.prototype at the top level',
    url: V,
    payload: `{"messages":${json(OAI)},"constructor":{"prototype":{"polluted":true}}}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
  },
  {
    name: 'constructor.prototype inside a message',
    url: W,
    payload: `{"messages":[{"role":"user","content":"hi","constructor":{"prototype":{"polluted":true}}}]}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_FORBIDDEN_KEY',
  },

  // --- deep nesting: a 400 whichever code the service picks, never a stack overflow ---
  {
    name: `tool message content nested ${DEPTH} levels deep`,
    url: W,
    payload: `{"messages":[${json(USER)},${json(CALL)},{"role":"tool","tool_call_id":"call_1","content":${deepArray(DEPTH)}}]}`,
    status: 400,
    code: ['CMP_ERR_REQUEST_TOO_DEEP', 'CMP_ERR_HISTORY_MALFORMED', 'CMP_ERR_REQUEST_VALIDATION'],
    pathPrefix: 'messages[2]',
  },
  {
    name: `tool message content nested ${DEPTH} levels deep (validate)`,
    url: V,
    payload: `{"messages":[${json(USER)},${json(CALL)},{"role":"tool","tool_call_id":"call_1","content":${deepArray(DEPTH)}}]}`,
    status: 400,
    code: ['CMP_ERR_REQUEST_TOO_DEEP', 'CMP_ERR_HISTORY_MALFORMED', 'CMP_ERR_REQUEST_VALIDATION'],
    pathPrefix: 'messages[2]',
  },
  {
    name: `unknown field inside a message nested ${DEPTH} levels deep`,
    url: W,
    payload: `{"messages":[${json(USER)},{"role":"assistant","content":"ok","metadata":${deepObject(DEPTH)}}]}`,
    status: 400,
    code: ['CMP_ERR_REQUEST_TOO_DEEP', 'CMP_ERR_HISTORY_MALFORMED'],
    pathPrefix: 'messages[1]',
  },
  {
    name: `unknown content part nested ${DEPTH} levels deep`,
    url: T,
    payload: `{"messages":[{"role":"user","content":[{"type":"x-custom","data":${deepObject(DEPTH)}}]}]}`,
    status: 400,
    code: ['CMP_ERR_REQUEST_TOO_DEEP', 'CMP_ERR_HISTORY_MALFORMED'],
    pathPrefix: 'messages[0]',
  },
  {
    name: `tools nested ${DEPTH} levels deep`,
    url: T,
    payload: `{"messages":${json(OAI)},"tools":[${deepObject(DEPTH)}]}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_TOO_DEEP',
    path: 'tools',
  },
  {
    name: `messages itself nested ${DEPTH} levels deep`,
    url: V,
    payload: `{"messages":${deepArray(DEPTH)}}`,
    status: 400,
    code: ['CMP_ERR_REQUEST_TOO_DEEP', 'CMP_ERR_HISTORY_MALFORMED', 'CMP_ERR_REQUEST_VALIDATION'],
    pathPrefix: 'messages',
  },
  {
    name: `anthropic system array nested ${DEPTH} levels deep`,
    url: T,
    payload: `{"messages":${json(ANTH)},"system":[${deepObject(DEPTH)}]}`,
    status: 400,
    code: 'CMP_ERR_REQUEST_TOO_DEEP',
    path: 'system',
  },

  // --- bad usage numbers ---
  {
    name: 'usage.total_tokens is not an integer',
    url: T,
    payload: { messages: OAI, usage: { total_tokens: 940.5 } },
    status: 400,
    code: ['CMP_ERR_OPTIONS_INVALID', 'CMP_ERR_REQUEST_VALIDATION'],
    pathPrefix: 'usage',
  },
  {
    name: 'usage.total_tokens beyond a safe integer',
    url: W,
    payload: { messages: OAI, usage: { total_tokens: 1e300 } },
    status: 400,
    code: ['CMP_ERR_OPTIONS_INVALID', 'CMP_ERR_REQUEST_VALIDATION'],
    pathPrefix: 'usage',
  },
  {
    name: 'usage.total_tokens is negative',
    url: T,
    payload: { messages: OAI, usage: { total_tokens: -940 } },
    status: 400,
    code: ['CMP_ERR_OPTIONS_INVALID', 'CMP_ERR_REQUEST_VALIDATION'],
    pathPrefix: 'usage',
  },

  // --- routes and methods ---
  { name: 'unknown route', url: '/v1/shrink', payload: { messages: OAI }, status: 404, code: 'CMP_ERR_ROUTE_NOT_FOUND' },
  { name: 'unknown version', url: '/v2/window', payload: { messages: OAI }, status: 404, code: 'CMP_ERR_ROUTE_NOT_FOUND' },
  {
    name: 'GET /v1/window',
    method: 'GET',
    url: W,
    status: [404, 405],
    code: ['CMP_ERR_ROUTE_NOT_FOUND', 'CMP_ERR_METHOD_NOT_ALLOWED'],
  },
  {
    name: 'GET /v1/tokens',
    method: 'GET',
    url: T,
    status: [404, 405],
    code: ['CMP_ERR_ROUTE_NOT_FOUND', 'CMP_ERR_METHOD_NOT_ALLOWED'],
  },
  {
    name: 'PUT /v1/validate',
    method: 'PUT',
    url: V,
    payload: { messages: OAI },
    status: [404, 405],
    code: ['CMP_ERR_ROUTE_NOT_FOUND', 'CMP_ERR_METHOD_NOT_ALLOWED'],
  },
];

function injectOptions(c: Case): InjectOptions {
  const options: InjectOptions = { method: c.method ?? 'POST', url: c.url };
  if (typeof c.payload === 'string') {
    options.payload = c.payload;
    options.headers = c.headers ?? JSON_CT;
  } else if (c.payload !== undefined) {
    options.payload = c.payload as Record<string, unknown>;
    if (c.headers) options.headers = c.headers;
  }
  return options;
}

const VALID = {
  messages: [SYS, USER, CALL, RESULT, ANSWER, USER2, { role: 'assistant', content: 'README updated.' }],
  keep: { runs: 1 },
};

t.test('malformed requests get precise problem documents and the app keeps serving', async (t) => {
  const app = await build(t);
  const byUrl = new Map<string, number>();
  for (const c of cases) byUrl.set(c.url, (byUrl.get(c.url) ?? 0) + 1);
  t.ok(cases.length >= 45, `${cases.length} cases`);
  for (const url of [W, T, V]) t.ok((byUrl.get(url) ?? 0) >= 10, `${byUrl.get(url)} cases against ${url}`);
  t.equal(new Set(cases.map((c) => c.name)).size, cases.length, 'case names are distinct');

  for (const c of cases) {
    await t.test(`${c.method ?? 'POST'} ${c.url}: ${c.name}`, async (t) => {
      const res = await app.inject(injectOptions(c));
      expectProblem(t, res, c);
      if (res.statusCode === 405) t.match(String(res.headers.allow), /POST/, 'a 405 lists the allowed method');
    });
  }

  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype was not polluted');
  t.notOk(Object.hasOwn(Object.prototype, 'polluted'), 'Object.prototype has no polluted key');

  const res = await app.inject({ method: 'POST', url: W, payload: VALID });
  t.equal(res.statusCode, 200, 'the same app still answers a valid /v1/window request');
  const body = res.json() as Record<string, unknown>;
  t.equal(body.format, 'openai-chat');
  t.equal(body.applied, true);
  t.same(body.messages, [SYS, USER, USER2, VALID.messages[6]], 'head, first user and the newest run are kept');
});

t.test('a body over COMPACTOR_BODY_LIMIT is a 413 on every endpoint', async (t) => {
  const app = await build(t, { COMPACTOR_BODY_LIMIT: '2048' });
  const big = { messages: [SYS, USER, { role: 'assistant', content: 'z'.repeat(3000) }] };
  for (const url of [W, T, V]) {
    const res = await app.inject({ method: 'POST', url, payload: big });
    expectProblem(t, res, { status: 413, code: 'CMP_ERR_REQUEST_BODY_TOO_LARGE' });
  }
  const small = await app.inject({ method: 'POST', url: T, payload: { messages: [SYS, USER, ANSWER] } });
  t.equal(small.statusCode, 200, 'a body under the limit is served by the same app');
});

t.test('a 5 MB string content is accepted', async (t) => {
  const app = await build(t);
  const prose = 'The build failed because the fixture path changed; see the log above for details.\n';
  const huge = prose.repeat(Math.ceil(5_000_000 / prose.length)).slice(0, 5_000_000);
  const messages = [SYS, USER, CALL, { ...RESULT, content: huge }, ANSWER, USER2, { role: 'assistant', content: 'Done.' }];

  const window = await app.inject({ method: 'POST', url: W, payload: { messages, keep: { runs: 1 } } });
  t.equal(window.statusCode, 200, '/v1/window answers 200');
  const w = window.json() as { messages: unknown[]; applied: boolean; dropped: { messages: number } };
  t.equal(w.applied, true);
  t.equal(w.dropped.messages, 3, 'the tool exchange with the 5 MB result was dropped');

  const tokens = await app.inject({ method: 'POST', url: T, payload: { messages } });
  t.equal(tokens.statusCode, 200, '/v1/tokens answers 200');
  const counted = tokens.json() as { total: number; messages: number[] };
  t.ok(counted.total > 500_000, `counted ${counted.total} tokens`);
  t.equal(counted.messages.length, messages.length);

  const validate = await app.inject({ method: 'POST', url: V, payload: { messages } });
  t.equal(validate.statusCode, 200, '/v1/validate answers 200');
  t.equal((validate.json() as { valid: boolean }).valid, true);
});

t.test('/v1/validate answers 200 with violations for parseable but broken histories', async (t) => {
  const app = await build(t);
  const broken: { name: string; payload: Record<string, unknown>; index: number; rule: string; format: string }[] = [
    {
      name: 'orphan tool result',
      payload: { messages: [SYS, USER, RESULT, ANSWER] },
      index: 2,
      rule: 'orphan_tool_result',
      format: 'openai-chat',
    },
    {
      name: 'mismatched tool result id',
      payload: { messages: [USER, CALL, { ...RESULT, tool_call_id: 'call_999' }, ANSWER] },
      index: 2,
      rule: 'orphan_tool_result',
      format: 'openai-chat',
    },
    {
      name: 'unanswered call followed by more messages',
      payload: { messages: [SYS, USER, CALL, USER2, ANSWER] },
      index: 2,
      rule: 'unanswered_tool_call',
      format: 'openai-chat',
    },
    {
      name: 'anthropic orphan tool_result',
      payload: { messages: [A_USER, A_ANSWER, A_RESULT] },
      index: 2,
      rule: 'orphan_tool_result',
      format: 'anthropic',
    },
    {
      name: 'anthropic roles not alternating',
      payload: { messages: [...ANTH, A_ANSWER] },
      index: 4,
      rule: 'roles_must_alternate',
      format: 'anthropic',
    },
    {
      name: 'anthropic plain-text roles not alternating (format given)',
      payload: { format: 'anthropic', messages: [USER, USER2, ANSWER] },
      index: 1,
      rule: 'roles_must_alternate',
      format: 'anthropic',
    },
    {
      name: 'anthropic history starting with assistant',
      payload: { messages: [A_ANSWER, ...ANTH] },
      index: 0,
      rule: 'must_start_with_user',
      format: 'anthropic',
    },
  ];
  for (const b of broken) {
    const res = await app.inject({ method: 'POST', url: V, payload: b.payload });
    t.equal(res.statusCode, 200, `${b.name}: 200`);
    t.match(String(res.headers['content-type']), /^application\/json/, `${b.name}: application/json`);
    const body = res.json() as { valid: boolean; format: string; violations: { index: number; rule: string; message: string }[] };
    t.equal(body.valid, false, `${b.name}: valid is false`);
    t.equal(body.format, b.format, `${b.name}: format`);
    t.ok(
      body.violations.some((v) => v.index === b.index && v.rule === b.rule && typeof v.message === 'string'),
      `${b.name}: violation ${b.rule} at ${b.index}`,
      { violations: body.violations },
    );
  }
  const ok = await app.inject({ method: 'POST', url: V, payload: { messages: OAI } });
  t.equal(ok.statusCode, 200);
  t.same(ok.json(), { valid: true, format: 'openai-chat', violations: [], warnings: [] }, 'a sound history is valid');
});

t.test('the request id of a problem is the one the client sent', async (t) => {
  const app = await build(t);
  const given = await app.inject({
    method: 'POST',
    url: W,
    payload: { messages: [] },
    headers: { 'x-request-id': 'agent-42.step-7' },
  });
  expectProblem(t, given, { status: 400, code: 'CMP_ERR_REQUEST_VALIDATION', path: 'messages' });
  t.equal(given.headers['x-request-id'], 'agent-42.step-7');
  t.equal((given.json() as { request_id: string }).request_id, 'agent-42.step-7');

  const unsafe = await app.inject({
    method: 'POST',
    url: W,
    payload: '{bad',
    headers: { ...JSON_CT, 'x-request-id': 'evil id <script>' },
  });
  expectProblem(t, unsafe, { status: 400, code: 'CMP_ERR_REQUEST_INVALID_JSON' });
  t.not(unsafe.headers['x-request-id'], 'evil id <script>', 'an unsafe request id is replaced');
});

t.test('deep nesting with the token cache disabled is still a 400', async (t) => {
  // With COMPACTOR_TOKEN_CACHE_ENTRIES=0 nothing serializes the message before the response does:
  // the window keeps it, the response serializer overflows the stack, and the client gets a 500.
  const app = await build(t, { COMPACTOR_TOKEN_CACHE_ENTRIES: '0' });
  const res = await app.inject({
    method: 'POST',
    url: W,
    payload: `{"messages":[${json(USER)},{"role":"assistant","content":"ok","metadata":${deepObject(DEPTH)}}]}`,
    headers: JSON_CT,
  });
  expectProblem(t, res, {
    status: 400,
    code: ['CMP_ERR_REQUEST_TOO_DEEP', 'CMP_ERR_HISTORY_MALFORMED'],
    pathPrefix: 'messages[1]',
  });
});

t.test('a 5 MB run of one character is counted in time linear in its length', async (t) => {
  // Byte-pair merging is quadratic in the length of one pre-token: unguarded, 'x'.repeat(80_000)
  // takes ~8 s and 5 MB hours. The counter cuts such runs into pieces. No wall-clock limit: the
  // run's CPU time is compared with that of 5 MB of ordinary prose counted by the same app in the
  // same test, with a margin that noise cannot reach and a quadratic count overshoots by far.
  const app: FastifyInstance = await build(t);
  const cpu = async (content: string): Promise<number> => {
    const before = process.cpuUsage();
    const res = await app.inject({ method: 'POST', url: T, payload: { messages: [USER, { role: 'assistant', content }] } });
    t.equal(res.statusCode, 200);
    const used = process.cpuUsage(before);
    return (used.user + used.system) / 1000;
  };
  const prose = 'The build failed because the fixture path changed; see the log above for details.\n';
  const baseline = await cpu(prose.repeat(Math.ceil(5_000_000 / prose.length)).slice(0, 5_000_000));
  const run = await cpu('x'.repeat(5_000_000));
  t.ok(run < 10 * baseline + 1000, `counted in ${Math.round(run)} ms of CPU; 5 MB of prose took ${Math.round(baseline)} ms`);
});
