import type { Item } from '../history/types.js';
import { extractFacts } from '../summarizers/facts.js';
import type { SummaryRequest, TranscriptEntry } from '../summarizers/types.js';
import type { PreparedHistory } from './types.js';

/**
 * The messages of a range as transcript entries for the summarizers: each message's prose, its
 * tool calls with their arguments, each tool result as its own entry with the tool's name and
 * status, media as short notes. Format-free: every detail comes from the adapter.
 */
export function rangeEntries(h: PreparedHistory, indexes: readonly number[]): TranscriptEntry[] {
  const { format, messages, items } = h;
  const toolNames = new Map<string, string>();
  for (let i = 0; i < (indexes[indexes.length - 1] ?? 0); i++) {
    if ((items[i] as Item).calls.length > 0) for (const c of format.callSites(messages[i])) toolNames.set(c.id, c.name);
  }
  const out: TranscriptEntry[] = [];
  for (const i of indexes) {
    const item = items[i] as Item;
    const message = messages[i];
    const calls = format.callSites(message);
    for (const c of calls) toolNames.set(c.id, c.name);
    for (const r of format.resultSites(message)) {
      out.push({
        role: 'tool',
        text: r.text,
        calls: [],
        tool: { name: toolNames.get(r.callId) ?? 'tool', error: r.error === true },
        media: [],
      });
    }
    const text = format.prose(message);
    const countable = format.countable(message);
    const media = [
      ...Array<string>(countable.images).fill('[image]'),
      ...Array<string>(countable.documents).fill('[file]'),
      ...Array<string>(countable.audio).fill('[audio]'),
    ];
    if (item.role === 'tool' && text === '' && calls.length === 0) continue;
    if (text === '' && calls.length === 0 && media.length === 0 && item.results.length > 0) continue;
    out.push({
      role: item.role === 'tool' ? 'tool' : item.role,
      text,
      calls: calls.map((c) => ({ name: c.name, args: c.args ? JSON.stringify(c.args) : '' })),
      media,
    });
  }
  return out;
}

/** The options of a summary request, as the summarize strategy takes them. */
export interface SummaryOptions {
  summarizer: { model?: string | undefined; prompt?: string | undefined; max_tokens: number; temperature?: number | undefined };
  max_input_tokens: number;
  timeout_ms?: number | undefined;
}

/**
 * What a summarizer is asked for a range: its transcript entries, the earlier summary it extends,
 * the exact facts found in both, the options, and a signal that ends at the request's deadline or
 * its own `timeout_ms`, whichever comes first.
 */
export function summaryRequest(
  h: PreparedHistory,
  indexes: readonly number[],
  previous: string | null,
  o: SummaryOptions,
  signal: AbortSignal | undefined,
): SummaryRequest {
  const entries = rangeEntries(h, indexes);
  const facts = extractFacts([previous ?? '', ...entries.flatMap((e) => [e.text, ...e.calls.map((c) => c.args)])]);
  const signals = [...(o.timeout_ms ? [AbortSignal.timeout(o.timeout_ms)] : []), ...(signal ? [signal] : [])];
  return {
    entries,
    previous,
    facts,
    maxTokens: o.summarizer.max_tokens,
    model: o.summarizer.model,
    instructions: o.summarizer.prompt,
    temperature: o.summarizer.temperature,
    maxInputTokens: o.max_input_tokens,
    signal: signals.length > 1 ? AbortSignal.any(signals) : signals[0],
  };
}
