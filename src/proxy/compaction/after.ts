/**
 * The deterministic digest of what came after a prepared summary's range: the user's words, what
 * the assistant said (its first words) and which tools it called, and the artifacts named, in
 * order, so that nothing the agent sent falls outside an instant compaction's answer. Format
 * agnostic (Anthropic, Responses, Chat): it reads `role`, `type`, `content`, `text`, `name` and
 * string leaves. One pass; each message's share bounded.
 */

import { typedWords } from '../../summarizers/user-words.js';

/** At most this much of one user message is quoted. */
export const USER_CHARS = 2000;
/** At most this much of one assistant message is quoted. */
export const ASSISTANT_CHARS = 300;
/** At most this many lines in all (the newest kept). */
export const MAX_LINES = 200;

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function clip(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max)}…` : one;
}

/** The texts and tool names of one message or item, by walking its content once (depth-bounded). */
function partsOf(value: unknown, texts: string[], tools: string[], depth = 0): void {
  if (depth > 6) return;
  if (typeof value === 'string') {
    texts.push(value);
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) partsOf(v, texts, tools, depth + 1);
    return;
  }
  if (!isObj(value)) return;
  const type = typeof value.type === 'string' ? value.type : '';
  if (/tool_use|function_call|custom_tool_call|tool_call/.test(type) && typeof value.name === 'string') tools.push(value.name);
  if (/result|output/.test(type)) return; // tool output: named by its artifacts, not quoted
  if (typeof value.text === 'string') texts.push(value.text);
  if (value.content !== undefined) partsOf(value.content, texts, tools, depth + 1);
  if (Array.isArray(value.tool_calls)) partsOf(value.tool_calls, texts, tools, depth + 1);
  if (isObj(value.function) && typeof value.function.name === 'string') tools.push(value.function.name);
}

const ARTIFACT = /art_[0-9a-f]{24}/g;

/**
 * One line per message after the range (none for tool output alone), then the artifacts they name
 * and those `named` names (the task kept before the range: its quote is the answer's task block).
 */
export function afterDigest(messages: readonly unknown[], named: readonly unknown[] = []): string {
  const lines: string[] = [];
  const artifacts = new Set<string>();
  for (const m of named) for (const id of (JSON.stringify(m) ?? '').match(ARTIFACT) ?? []) artifacts.add(id);
  for (const m of messages) {
    const json = JSON.stringify(m) ?? '';
    for (const id of json.match(ARTIFACT) ?? []) artifacts.add(id);
    if (!isObj(m)) continue;
    const role = typeof m.role === 'string' ? m.role : '';
    const texts: string[] = [];
    const tools: string[] = [];
    partsOf(m.role === undefined && m.type !== 'message' ? [m] : m.content, texts, tools);
    const text = texts.join(' ');
    if (role === 'user' && text.trim()) lines.push(`- User: ${clip(text, USER_CHARS)}`);
    else if (role === 'assistant' && text.trim()) lines.push(`- Assistant: ${clip(text, ASSISTANT_CHARS)}`);
    if (tools.length > 0) lines.push(`- Called: ${tools.join(', ')}`);
  }
  const kept = lines.slice(-MAX_LINES);
  if (artifacts.size > 0) kept.push(`- Artifacts named: ${[...artifacts].join(', ')}`);
  return kept.join('\n');
}

/**
 * The line that opens an answer's task block: the user's words of the first user turn, one
 * `- User: ` line per message. An agent carries the answer on as the first message of its
 * compacted history (Claude Code's continuation), which the next answer keeps before its summary
 * as the task: the block found there is carried on as it is, so the task survives every
 * compaction at the same size instead of being quoted inside a quote until it is cut.
 */
export const TASK_HEADING = "The task, in the user's words (carried through each compaction):";

const TASK_LINE = '- User: ';

/** The text of a message's text parts, lines kept (tool output left out). */
function textOf(m: unknown): string {
  if (!isObj(m)) return '';
  const texts: string[] = [];
  partsOf(m.role === undefined && m.type !== 'message' ? [m] : m.content, texts, []);
  return texts.join('\n');
}

/** The lines of the last task block in `text`, or undefined when it holds none. Linear. */
function carried(text: string): string[] | undefined {
  const at = text.lastIndexOf(TASK_HEADING);
  if (at < 0) return undefined;
  const lines: string[] = [];
  for (const line of text
    .slice(at + TASK_HEADING.length)
    .split('\n')
    .slice(1)) {
    if (!line.startsWith(TASK_LINE)) break;
    lines.push(line);
  }
  return lines.length > 0 ? lines : undefined;
}

/**
 * The task block of an answer from the messages kept before its summary (the first user turn): a
 * block an earlier answer wrote, carried as it is; else what the user typed in each of its user
 * messages (without the context blocks agents inject), each on one line. '' when there is none.
 */
export function taskBlock(head: readonly unknown[]): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  const add = (line: string) => {
    if (seen.has(line)) return;
    seen.add(line);
    lines.push(line);
  };
  for (const m of head) {
    if (!isObj(m) || m.role !== 'user') continue;
    const text = textOf(m);
    const earlier = carried(text);
    if (earlier) for (const line of earlier) add(line);
    else {
      const typed = typedWords(text);
      if (typed) add(`${TASK_LINE}${clip(typed, USER_CHARS)}`);
    }
  }
  return lines.length > 0 ? [TASK_HEADING, ...lines].join('\n') : '';
}
