import type { Markers } from '../history/markers.js';
import type { PreparedHistory } from '../history/prepared.js';
import type { ReportedUsage } from '../tokens/occupancy.js';
import type { CacheSettings } from './fields.js';

/** What the provider's prompt cache holds for the coming call, in the service's own counting. */
export interface CacheState {
  /** Messages before this index are in the cached prefix. */
  readonly end: number;
  /** Tokens of the cached prefix: system, tools and framing, then messages [0, end). */
  readonly tokens: number;
  /** `usage`: read from the previous call's usage; `assumed`: no usage, the previous call's prompt; `disabled`: `cache.enabled` false. */
  readonly source: 'usage' | 'assumed' | 'disabled';
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/**
 * Where the previous call's prompt ended among the first `covered` messages: before the reply it
 * got (the assistant items at the end of the covered messages, several in OpenAI Responses).
 */
export function promptEnd(h: Pick<PreparedHistory, 'items'>, covered: number): number {
  let end = Math.min(covered, h.items.length);
  while (end > 0 && h.items[end - 1]?.role === 'assistant') end--;
  return end;
}

/** Where the previous call's prompt ended when nothing says: before the newest assistant reply. */
function lastPromptEnd(h: Pick<PreparedHistory, 'items'>): number {
  let last = h.items.length - 1;
  while (last >= 0 && h.items[last]?.role !== 'assistant') last--;
  return last < 0 ? 0 : promptEnd(h, last + 1);
}

/**
 * The previous call's prompt and the part of it the provider cached, as its usage reports them:
 * Anthropic's cache fields (what was read and written up to the last breakpoint); otherwise the
 * whole prompt, which OpenAI and Gemini cache automatically.
 */
function reportedPrompt(usage: ReportedUsage): { prompt: number; cached: number } | undefined {
  const read = num(usage.cache_read_input_tokens);
  const written = num(usage.cache_creation_input_tokens);
  if (read !== undefined || written !== undefined) {
    const cached = (read ?? 0) + (written ?? 0);
    return { prompt: (num(usage.input_tokens) ?? 0) + cached, cached };
  }
  const prompt =
    num(usage.prompt_tokens) ?? num(usage.input_tokens) ?? num(usage.promptTokenCount) ?? num(usage.prompt_token_count);
  return prompt === undefined ? undefined : { prompt, cached: prompt };
}

/**
 * The cache state of a request (docs/strategies.md, "Cost"): the prefix the provider holds is the
 * previous call's prompt (from `usage`: what it covered, minus its reply), or the part of it its
 * cache fields name, mapped onto the messages by the service's own counts (scaled to the
 * provider's). Without usage, the provider is assumed to cache (they all do): the prompt before
 * the newest assistant reply. Linear in the number of messages.
 */
export function cacheState(
  h: Pick<PreparedHistory, 'items' | 'counts'>,
  fixed: number,
  usage: ReportedUsage | undefined,
  settings: CacheSettings | undefined,
): CacheState {
  if (settings?.enabled === false) return { end: 0, tokens: 0, source: 'disabled' };
  const prefixTokens = (end: number) => {
    let t = fixed;
    for (let i = 0; i < end; i++) t += h.counts[i] as number;
    return t;
  };
  const reported = usage ? reportedPrompt(usage) : undefined;
  if (!usage || !reported) {
    const end = lastPromptEnd(h);
    return { end, tokens: end > 0 ? prefixTokens(end) : 0, source: 'assumed' };
  }
  const end = promptEnd(h, usage.messages_covered ?? h.items.length);
  const whole = prefixTokens(end);
  if (reported.prompt <= 0 || reported.cached >= reported.prompt * 0.98) return { end, tokens: whole, source: 'usage' };
  // Only part of the prompt was cached (an earlier breakpoint): walk to it in our counting.
  const goal = (reported.cached / reported.prompt) * whole;
  let tokens = fixed;
  let k = 0;
  while (k < end && tokens + (h.counts[k] as number) <= goal) tokens += h.counts[k++] as number;
  return { end: k, tokens: reported.cached > 0 ? tokens : 0, source: 'usage' };
}

/** How far from the start an earlier rolling summary of ours can sit: after the system head, the first user turn and a summary request. */
const SUMMARY_REACH = 4;

/**
 * Model calls the run has made so far: one per assistant reply the history shows, plus those an
 * earlier summary of ours stands for (its marker says how many messages it covers; a model call
 * is a reply and what answered it, two messages). Without them a run would look young again
 * after every summary, and the horizon estimator would shrink with it. `shown`: those whose
 * replies the history shows (what its growth per call is measured over). Only a summary whose
 * marker verifies (`markers`) counts: a forged or quoted one is the user's text.
 */
export function callsSoFar(
  h: Pick<PreparedHistory, 'items' | 'messages' | 'format' | 'head'>,
  markers: Pick<Markers, 'readSummary'>,
): {
  total: number;
  shown: number;
} {
  let shown = 0;
  h.items.forEach((item, i) => {
    if (item.role === 'assistant' && h.items[i - 1]?.role !== 'assistant') shown++;
  });
  return { total: shown + callsSummarized(h, markers), shown };
}

/** Model calls an earlier summary of ours at the start of the history stands for. */
function callsSummarized(
  h: Pick<PreparedHistory, 'messages' | 'format' | 'head'>,
  markers: Pick<Markers, 'readSummary'>,
): number {
  const end = Math.min(h.messages.length, h.head + SUMMARY_REACH);
  for (let i = 0; i < end; i++) {
    const m = h.messages[i];
    const prose = h.format.prose(m);
    const last = h.format.lastText(m);
    // One verification per text: a message of one text block has the same prose and last text.
    const marker = markers.readSummary(prose) ?? (last !== prose ? markers.readSummary(last) : undefined);
    if (marker) return Math.floor(marker.covers / 2);
  }
  return 0;
}
