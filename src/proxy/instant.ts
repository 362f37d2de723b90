import type { FastifyReply, FastifyRequest } from 'fastify';
import pTimeout from 'p-timeout';
import type { Caller } from '../service/artifacts.js';
import type { ReadySummary } from './compaction/rolling.js';
import { OPT_OUT_HEADER, outcomeLabel } from './compaction/step.js';
import { compactionStep, type InstantDeps, instantOptions, keepSealed, rollOn, unsealed } from './compaction/wire.js';
import type { ProxyContext } from './context.js';
import { conversationKey } from './conversation.js';
import { requestOptions } from './options.js';
import { type CallOutcome, countOutcome, outcomeHeaders, outcomeOf } from './outcome.js';
import type { Provider, Reducible } from './providers.js';
import { recordCall } from './record.js';
import type { Made } from './reduce.js';
import { windowKey } from './window.js';

/**
 * Instant compaction at the proxy's front door (one step after the body is parsed, before
 * reduction): an agent's own compaction request answered from the conversation's prepared summary
 * (nothing forwarded), or passed on byte-identical (never reduced); any other request gets its
 * sealed `compaction` items put back as their summary text, and its conversation's rolling
 * prepared summary kept once fit has measured it (`roll`). The opt-out header never reaches the provider (headers.ts drops it with
 * the other `x-compactor-*` headers).
 */

/** What the front door does next. */
export type FrontStep =
  /** Replied: an answer of ours. */
  | { readonly kind: 'answered'; readonly sent: FastifyReply }
  /**
   * Forward the raw bytes as they came, never reduced (`compaction` says why); `body`: the same
   * request with Compactor's own sealed items put back as their summary text (the provider never
   * sees a token it did not issue), when it held any.
   */
  | { readonly kind: 'passed'; readonly compaction: NonNullable<CallOutcome['compaction']>; readonly body?: Buffer }
  /** Not a compaction request: go on with `body` (its sealed items replaced: `changed`). */
  | {
      readonly kind: 'go-on';
      readonly body: Record<string, unknown>;
      readonly changed: boolean;
      /**
       * Keeps the conversation's rolling prepared summary, given the occupancy fit measured of the
       * call as it goes upstream, unreduced (0: unknown, or reduced by the proxy: nothing done);
       * absent where instant compaction is off.
       */
      readonly roll?: (occupancy: number) => void;
    };

/** The request's proxy options (a bad `x-compactor-options` is the reduction's to refuse: the configured ones here). */
function optionsOf(ctx: ProxyContext, request: FastifyRequest): Record<string, unknown> {
  try {
    return requestOptions(ctx.defaults, [request.headers['x-compactor-options']].flat()[0]);
  } catch {
    return ctx.defaults;
  }
}

/** The summarizer usage an answer carries in `x-compactor-summarizer-usage` (billed once, by this answer). */
function usageHeader(usage: { input_tokens: number; output_tokens: number } | undefined): string {
  return `input=${usage?.input_tokens ?? 0}, output=${usage?.output_tokens ?? 0}`;
}

/** The front door's instant-compaction step for a parsed model call. */
export async function instantStep(
  ctx: ProxyContext,
  provider: Provider,
  reducible: Reducible,
  request: FastifyRequest,
  reply: FastifyReply,
  at: { path: string; started: number; model: string | undefined; caller: Caller; owner: string },
  json: Record<string, unknown>,
): Promise<FrontStep> {
  const { compactor } = ctx.app;
  const options = optionsOf(ctx, request);
  const { setting, share } = instantOptions(options);
  const deps: InstantDeps = {
    compactor,
    preparer: ctx.app.preparer,
    caller: at.caller,
    provider,
    reducible,
    path: at.path,
    headers: request.headers,
    setting,
    readMs: Math.max(1000, ctx.config.COMPACTOR_PROXY_BUDGET_MS),
  };
  // Sealed items put back first: the rolling summary was prepared on the history as forwarded, so a
  // later compaction request (Codex's second) finds it only by that history, not by our tokens.
  const out = await unsealed(compactor.artifacts, at.caller, provider, at.path, json);
  const { step, ready } = await compactionStep(deps, out.body);
  const label = outcomeLabel(step);
  if (step.kind === 'passed' && label) {
    const compaction = { label, header: step.header };
    return out.replaced > 0
      ? { kind: 'passed', compaction, body: Buffer.from(JSON.stringify(out.body)) }
      : { kind: 'passed', compaction };
  }
  if (step.kind === 'answered' && label && ready) {
    const call: CallOutcome = {
      ...outcomeOf(provider.name, at.started, at.model, undefined, undefined),
      conversation: conversationOf(provider, reducible, request, out.body),
      outcome: 'answered',
      compaction: { label, header: step.header },
    };
    countOutcome(ctx.metrics, call);
    recordCall(ctx, at.caller, call, { made: answeredWith(ready) });
    ctx.report.call(call, provider.sessionOf(request.headers, json) ?? at.caller.scope);
    const { answer } = step;
    if (answer.sealed) await bounded(ctx, keepSealed(compactor.artifacts, at.caller, answer.sealed, answer.text));
    await ctx.app.preparer.after(at.caller.scope, { spliced: ready.entry.id });
    const sent = reply
      .code(200)
      .headers(outcomeHeaders(call))
      .header('x-compactor-summarizer-usage', usageHeader(ready.entry.usage))
      .type(answer.contentType)
      .send(answer.body);
    return { kind: 'answered', sent };
  }
  const changed = out.replaced > 0;
  if (reducible.countOnly || setting === false || request.headers[OPT_OUT_HEADER] !== undefined)
    return { kind: 'go-on', body: out.body, changed };
  // The window the reduction fits the call to: the options', the provider's learned one, the table's, else the default.
  const window =
    typeof options.context_window === 'number'
      ? options.context_window
      : ctx.windows.windowFor(windowKey(at.owner, provider.name, at.model), at.model, options);
  const roll = (occupancy: number) => {
    if (occupancy <= 0) return;
    void rollOn(deps, out.body, share, window, occupancy).catch((error: unknown) =>
      ctx.app.log.warn({ reason: error instanceof Error ? error.name : 'unknown' }, 'proxy: rolling summary not started'),
    );
  };
  return { kind: 'go-on', body: out.body, changed, roll };
}

/**
 * What an answered compaction made, for the conversation record: the prepared summary it answered
 * with (its range's artifact, its text kept apart), sitting after the messages it keeps before it.
 */
function answeredWith(ready: ReadySummary): Made {
  const { head, coveredTo } = ready;
  return {
    brokenAt: null,
    rewritten: 0,
    artifacts: [],
    summary: {
      id: ready.artifactId ?? ready.entry.id,
      text: ready.text,
      message_index: head.length,
      covered_messages: Math.max(0, coveredTo - head.length),
      summarizer: ready.writtenBy,
    },
  };
}

/** The conversation's short id (`x-compactor-conversation`), as a reduction of the same history names it. */
function conversationOf(
  provider: Provider,
  reducible: Reducible,
  request: FastifyRequest,
  body: Record<string, unknown>,
): string | undefined {
  const history = body[reducible.history];
  if (!Array.isArray(history) || history.length === 0) return undefined;
  return conversationKey(provider, provider.sessionOf(request.headers, body), reducible.systemOf(body), history[0]).slice(0, 16);
}

/** A store write the answer waits on, bounded: past it (or failing), the answer goes anyway (the item reads back as a notice). */
async function bounded(ctx: ProxyContext, write: Promise<void>): Promise<void> {
  try {
    await pTimeout(write, { milliseconds: Math.max(1000, ctx.config.COMPACTOR_PROXY_BUDGET_MS) });
  } catch {
    ctx.app.log.warn({ reason: 'store' }, 'proxy: instant compaction text not stored');
  }
}
