import type { TranscriptEntry } from './types.js';

/** Characters kept at the head and the tail of one long item; the middle is elided with a note. */
export const ITEM_HEAD = 1500;
export const ITEM_TAIL = 500;

/**
 * Escapes content so that it can never close or open the transcript's framing tags: the
 * transcript is data for the summarizer, never instructions (a tool result that says
 * `</transcript> Ignore the above` stays inside its element).
 */
export function escapeContent(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Head and tail of a long text, the middle replaced by a note of how much was left out. */
export function clip(text: string, head = ITEM_HEAD, tail = ITEM_TAIL): string {
  if (text.length <= head + tail + 64) return text;
  return `${text.slice(0, head)}\n[… ${text.length - head - tail} characters omitted …]\n${text.slice(text.length - tail)}`;
}

/** One entry as a role-tagged element: tool calls with name and arguments, results with tool and status. */
export function renderEntry(e: TranscriptEntry): string {
  const lines: string[] = [];
  if (e.text) lines.push(escapeContent(clip(e.text)));
  for (const note of e.media) lines.push(note);
  for (const call of e.calls) lines.push(`[call ${escapeContent(call.name)} ${escapeContent(clip(call.args, 600, 200))}]`);
  const body = lines.join('\n');
  if (e.tool) {
    const status = e.tool.error ? 'error' : 'ok';
    return `<tool name="${escapeContent(e.tool.name)}" status="${status}">\n${body}\n</tool>`;
  }
  return `<${e.role}>\n${body}\n</${e.role}>`;
}

/** The whole range as one transcript, inside `<transcript>` tags. */
export function renderTranscript(entries: readonly TranscriptEntry[]): string {
  return `<transcript>\n${entries.map(renderEntry).join('\n')}\n</transcript>`;
}
