import type { CallOutcome } from './outcome.js';

/** Conversations remembered as already warned about (a reason each): the oldest forgotten past this. */
const WARNED_MAX = 10_000;

/** The logger the report writes to (pino's). */
interface Log {
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
}

/**
 * The proxy's log: one line per model call at `info` (provider, model, conversation id, outcome
 * with its reason, an agent's own compaction request's `compaction=<label>` (`answered`,
 * `passed_<reason>`), tokens before and after, prefix kept or broken, ms before forwarding), and a
 * bypass once per conversation and reason at `warn`, so that a call that is never reduced is seen
 * without a line per call. Counts and ids only: no content, no credential.
 */
export class CallReport {
  private readonly warned = new Set<string>();

  constructor(private readonly log: Log) {}

  /** Reports one model call; `who` tells the conversation apart when the call was bypassed before it was found. */
  call(call: CallOutcome, who: string): void {
    if (call.outcome === 'passthrough') return;
    const line = {
      provider: call.provider,
      model: call.model?.slice(0, 100),
      conversation: call.conversation,
      outcome: call.outcome,
      ...(call.reason ? { reason: call.reason } : {}),
      ...(call.compaction ? { compaction: call.compaction.label } : {}),
      tokens_before: call.tokens.before,
      tokens_after: call.tokens.after,
      prefix: call.prefix,
      ms: Math.round(call.ms * 10) / 10,
    };
    this.log.info(line, 'proxy: model call');
    if (call.outcome !== 'bypass') return;
    const key = `${call.reason}\0${call.conversation ?? who}`;
    if (this.warned.has(key)) return;
    if (this.warned.size >= WARNED_MAX) this.warned.delete(this.warned.values().next().value as string);
    this.warned.add(key);
    this.log.warn(
      { provider: call.provider, model: line.model, conversation: call.conversation, reason: call.reason },
      `proxy: model calls of this conversation go upstream unreduced (reason=${call.reason}); see docs/proxy.md`,
    );
  }
}
