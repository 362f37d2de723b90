import { asArray, asObject } from '../provider/parse.js';
import { shellArguments, shellTool } from '../provider/scenario.js';
import type { JsonValue, ModelRequest, Reply, Scenario, ToolCall, ToolSpec } from '../provider/types.js';

/** The task a long session is given: a string no reduction has a reason to rewrite, found in a request's JSON as is. */
export const TASK_TEXT =
  'Task LS-4217: survey the sixty module listings of the billing service one shell command at a time, ' +
  'then report which modules export a handler for refunds. Keep the listings in order.';

/** What kind of call a request is, as the fake model sees it. */
export type CallKind = 'step' | 'final' | 'compaction' | 'aux';

/** Options of the long-session scenario. */
export interface LongSessionOptions {
  /** Tool calls before the final answer (default 60). */
  calls?: number;
  /** Characters of each step's output, about (default 10,000: about 2,500 tokens, varying 2–3.3k). */
  outputChars?: number;
  /** Characters of the answer to an agent's own compaction request (default 8,000: about 2,000 tokens). */
  summaryChars?: number;
  /** How long an agent's own compaction request takes to answer, in ms (default 0; issue 38's bench: 20,000). */
  compactionDelayMs?: number;
  /** How long every other call takes to answer, in ms (default 0), as a model takes seconds. */
  callDelayMs?: number;
}

/** The texts of a request's last user item (Anthropic content blocks, Responses input items). */
function lastUserText(history: JsonValue[]): string {
  for (let i = history.length - 1; i >= 0; i--) {
    const item = asObject(history[i]);
    if (item?.role !== 'user') continue;
    if (typeof item.content === 'string') return item.content;
    return asArray(item.content)
      .map((b) => {
        const block = asObject(b);
        return block && (block.type === 'text' || block.type === 'input_text') ? String(block.text ?? '') : '';
      })
      .join('\n');
  }
  return '';
}

function header(request: ModelRequest, name: string): string {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

/**
 * Whether a request is the agent's own compaction: Codex marks it (`x-codex-turn-metadata` with
 * `request_kind: "compaction"`, a trailing `compaction_trigger` item, or its "CONTEXT CHECKPOINT
 * COMPACTION" prompt); Claude Code's last user message is its summarisation instruction.
 */
export function isCompaction(request: ModelRequest): boolean {
  if (/"request_kind"\s*:\s*"compaction"/.test(header(request, 'x-codex-turn-metadata'))) return true;
  const last = asObject(request.history[request.history.length - 1]);
  if (last?.type === 'compaction_trigger') return true;
  const text = lastUserText(request.history);
  if (/CONTEXT CHECKPOINT COMPACTION/.test(text)) return true;
  return /create a detailed summary of the conversation/i.test(text) || /summar(y|ize) .*conversation so far/i.test(text);
}

/** The classification of a request (before any answer): compaction, an auxiliary call (no shell tool), or a step. */
export function callKind(request: ModelRequest, calls: number, step: number): CallKind {
  if (isCompaction(request)) return 'compaction';
  if (!shellTool(request.tools) && !codeTool(request)) return 'aux';
  return step >= calls ? 'final' : 'step';
}

/** Codex's code-mode tool (its default model): a custom `exec` tool whose JavaScript calls `tools.exec_command`. */
function codeTool(request: ModelRequest): ToolSpec | undefined {
  return request.tools.find((t) => t.name === 'exec' && t.kind === 'custom');
}

/** The tool call that runs `command`: the shell tool's, else a code-mode script calling `exec_command`. */
function runCall(request: ModelRequest, command: string, step: number): ToolCall | undefined {
  const shell = shellTool(request.tools);
  if (shell) return { name: shell.name, input: shellArguments(shell, command, step) };
  const code = codeTool(request);
  if (!code) return undefined;
  const script = `const r = await tools.exec_command({ cmd: ${JSON.stringify(command)}, max_output_tokens: 8000 });\ntext(r.output);`;
  return { name: code.name, input: { input: script } };
}

/** A step's shell command: a listing of about `chars` characters, different at every step. */
export function stepCommand(step: number, chars: number): string {
  const lineChars = 92;
  const lines = Math.max(1, Math.round((chars * (0.8 + ((step * 7) % 11) / 20)) / lineChars));
  const format = `src/billing/module_${String(step + 1).padStart(2, '0')}/handler_%04g.ts: export function handle(input: Invoice): Result`;
  return `seq -f '${format}' 1 ${lines}`;
}

/** A summary as a model writes one for an agent's compaction (Claude Code asks for `<analysis>` then `<summary>`): the task restated, then notes, about `chars` long. */
export function compactionSummary(step: number, chars: number): string {
  const head = `<analysis>The user asked for a survey of module listings; ${step} have run.</analysis>\n<summary>\nPrimary request: ${TASK_TEXT}\nProgress: ${step} listings run.\n`;
  const line = 'Listing notes: module handlers exported as expected; no refund handler seen in this listing yet.\n';
  let text = head;
  for (let i = 0; text.length < chars; i++) text += `${i + 1}. ${line}`;
  return `${text}</summary>`;
}

/**
 * The long-session scenario: `calls` shell commands with large outputs, then a final answer.
 * The step a request is at is remembered per conversation (the client's session id), not read
 * from the tool results still in the history: the agent's own compaction and Compactor's
 * reductions take them out. An agent's own compaction request is answered with a summary of
 * about 2,000 tokens (after `compactionDelayMs`); a request with no shell tool (a title) gets a
 * short text. Every other answer comes after `callDelayMs`.
 */
export function longSession(options: LongSessionOptions = {}): Scenario {
  const calls = options.calls ?? 60;
  const outputChars = options.outputChars ?? 10_000;
  const summaryChars = options.summaryChars ?? 8_000;
  const issued = new Map<string, number>();
  const delayed = (reply: Reply): Reply => (options.callDelayMs ? { ...reply, delayMs: options.callDelayMs } : reply);
  return (request): Reply => {
    const known = issued.get(request.conversation) ?? 0;
    const step = Math.max(known, request.toolResults);
    const kind = callKind(request, calls, step);
    if (kind === 'compaction') return { text: compactionSummary(step, summaryChars), delayMs: options.compactionDelayMs ?? 0 };
    if (kind === 'final')
      return delayed({ text: `Done: ran ${calls} listings; module_07 and module_42 export refund handlers.` });
    const call = kind === 'step' ? runCall(request, stepCommand(step, outputChars), step) : undefined;
    if (!call) return delayed({ text: 'Billing module survey' });
    issued.set(request.conversation, step + 1);
    return delayed({ text: `Listing module ${step + 1}.`, toolCalls: [call] });
  };
}
