/**
 * Recognises an agent's own compaction request by the markers its pinned release sends (captured
 * in test/fixtures/agent-compaction), never by prose alone where a marker exists. A request not
 * recognised with confidence is undefined: the proxy then treats it as any other request.
 *
 * What each agent must keep sending for recognition to hold:
 * - Claude Code (2.1.332): a `/v1/messages` request from `claude-cli/…` (its `user-agent`, or its
 *   `x-claude-code-session-id` header) whose last message is a user message ending with a text
 *   block (after any tool results) that asks for an `<analysis>` block then a `<summary>` block and
 *   lays the summary out as the numbered sections of `CLAUDE_CODE_SECTIONS` (at least
 *   `CLAUDE_CODE_MIN_SECTIONS` of them, on their own lines, inside a `<summary>` … `</summary>`
 *   template). The same instruction serves its auto-compaction and `/compact`.
 * - Codex (0.171.0), built-in OpenAI provider: a Responses request whose `input` ends with
 *   `{"type": "compaction_trigger"}` (a structural item, not text). Its older
 *   `POST /responses/compact` endpoint (not called by 0.171.0) is recognised by its path.
 * - Codex, custom provider (local compaction): `x-codex-turn-metadata` (the header, or the same
 *   JSON in the body's `client_metadata`) with `request_kind: "compaction"`, and the last input
 *   item a user message holding `CODEX_LOCAL_MARKER`.
 */

/** The agents whose own compaction Compactor recognises. */
export type CompactionAgent = 'claude-code' | 'codex';

/**
 * How the agent compacts: Claude Code's summarisation request (`summary`), Codex's local
 * compaction through a custom provider (`local`), its `compaction_trigger` through the built-in
 * provider (`trigger`), its older `/responses/compact` endpoint (`compact-endpoint`).
 */
export type CompactionForm = 'summary' | 'local' | 'trigger' | 'compact-endpoint';

/** A recognised compaction request: whose, which form, and whether it asked for a stream. */
export interface RecognizedCompaction {
  agent: CompactionAgent;
  form: CompactionForm;
  stream: boolean;
}

/** Request headers as Node gives them (lower-case names). */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/** The numbered sections of Claude Code's summary template (2.1.332), in order. */
export const CLAUDE_CODE_SECTIONS: readonly string[] = [
  'Primary Request and Intent',
  'Key Technical Concepts',
  'Files and Code Sections',
  'Errors and fixes',
  'Problem Solving',
  'All user messages',
  'Pending Tasks',
  'Current Work',
  'Optional Next Step',
];

/** How many of those section lines the template must hold (a future release may rename a couple). */
export const CLAUDE_CODE_MIN_SECTIONS = 7;

/** The phrase of Codex's local compaction prompt (codex-rs `templates/compact/prompt.md`). */
export const CODEX_LOCAL_MARKER = 'CONTEXT CHECKPOINT COMPACTION';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function asObject(value: unknown): JsonObject | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : undefined;
}

function header(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The path without its query, for matching its end. */
function pathOnly(path: string): string {
  const q = path.indexOf('?');
  return q < 0 ? path : path.slice(0, q);
}

/** The last text of a message: its string content, or the text of its last block when that block is text. */
function lastText(message: JsonObject | undefined): string | undefined {
  if (!message) return undefined;
  const content = message.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.length === 0) return undefined;
  const block = asObject(content[content.length - 1]);
  if (!block || (block.type !== 'text' && block.type !== 'input_text')) return undefined;
  return typeof block.text === 'string' ? block.text : undefined;
}

/**
 * Whether a text is Claude Code's summary instruction: the `<analysis>` and `<summary>` tags, and a
 * `<summary>` … `</summary>` template holding enough of the numbered section lines, in order.
 * Linear: a bounded number of `indexOf` passes.
 */
export function isClaudeCodeInstruction(text: string): boolean {
  if (!text.includes('<analysis>')) return false;
  // The template: a `<summary>` line, then the section lines, then `</summary>`.
  let from = text.indexOf('\n<summary>\n');
  while (from >= 0) {
    const end = text.indexOf('\n</summary>', from);
    if (end < 0) return false;
    const template = text.slice(from, end);
    let found = 0;
    let at = 0;
    CLAUDE_CODE_SECTIONS.forEach((title, i) => {
      const next = template.indexOf(`\n${i + 1}. ${title}:`, at);
      if (next >= 0) {
        found++;
        at = next;
      }
    });
    if (found >= CLAUDE_CODE_MIN_SECTIONS) return true;
    from = text.indexOf('\n<summary>\n', end);
  }
  return false;
}

function fromClaudeCode(headers: HeaderBag): boolean {
  return (
    (header(headers, 'user-agent') ?? '').startsWith('claude-cli/') || header(headers, 'x-claude-code-session-id') !== undefined
  );
}

function recognizeAnthropic(path: string, headers: HeaderBag, body: JsonObject): RecognizedCompaction | undefined {
  if (!/\/v1\/messages$/.test(path) || !fromClaudeCode(headers)) return undefined;
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) return undefined;
  const last = asObject(messages[messages.length - 1]);
  if (last?.role !== 'user') return undefined;
  const text = lastText(last);
  if (text === undefined || !isClaudeCodeInstruction(text)) return undefined;
  return { agent: 'claude-code', form: 'summary', stream: body.stream === true };
}

/** Codex's turn metadata: the header, else the same JSON in the body's `client_metadata`. */
function codexTurnMetadata(headers: HeaderBag, body: JsonObject): JsonObject | undefined {
  const raw = header(headers, 'x-codex-turn-metadata') ?? asObject(body.client_metadata)?.['x-codex-turn-metadata'];
  if (typeof raw !== 'string' || raw.length > 65_536) return undefined;
  try {
    return asObject(JSON.parse(raw));
  } catch {
    return undefined;
  }
}

function recognizeResponses(path: string, headers: HeaderBag, body: JsonObject): RecognizedCompaction | undefined {
  const input = body.input;
  if (!Array.isArray(input) || input.length === 0) return undefined;
  const stream = body.stream === true;
  if (/\/responses\/compact$/.test(path)) return { agent: 'codex', form: 'compact-endpoint', stream: false };
  if (!/\/responses$/.test(path)) return undefined;
  const last = asObject(input[input.length - 1]);
  if (last?.type === 'compaction_trigger') return { agent: 'codex', form: 'trigger', stream };
  if (codexTurnMetadata(headers, body)?.request_kind !== 'compaction') return undefined;
  if (last?.type !== 'message' || last.role !== 'user' || !lastText(last)?.includes(CODEX_LOCAL_MARKER)) return undefined;
  return { agent: 'codex', form: 'local', stream };
}

/**
 * The agent's own compaction request this is, or undefined. `provider` is the proxy route's
 * provider (`anthropic`, `openai`, …), `path` the request's path (any prefix before `/v1/…`, any
 * query), `body` its parsed JSON. Never throws.
 */
export function recognizeCompaction(
  provider: string,
  path: string,
  headers: HeaderBag,
  body: unknown,
): RecognizedCompaction | undefined {
  const object = asObject(body);
  if (!object) return undefined;
  const bare = pathOnly(path);
  if (provider === 'anthropic') return recognizeAnthropic(bare, headers, object);
  if (provider === 'openai') return recognizeResponses(bare, headers, object);
  return undefined;
}
