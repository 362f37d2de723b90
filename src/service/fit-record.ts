import type { z } from 'zod';
import type { ActionSchema, ArtifactRefSchema, BilledUsage, SummaryReportSchema } from '../contract/parts.js';
import type { CostReport } from '../cost/model.js';
import { resolveModel } from '../tokens/models.js';
import type { Caller } from './artifacts.js';
import type { CallInput } from './conversation-view.js';
import type { ConversationService } from './conversations.js';

/** What a fit answer says that the conversation record reads (counts and ids; the summary text is stored, not recorded). */
export interface FitAnswer {
  readonly format: string;
  readonly applied: boolean;
  readonly reason?: string | undefined;
  readonly tokens: { readonly before: number; readonly after: number };
  readonly usage: z.output<typeof BilledUsage>;
  readonly actions: readonly z.output<typeof ActionSchema>[];
  readonly artifacts?: readonly z.output<typeof ArtifactRefSchema>[] | undefined;
  readonly summary?: z.output<typeof SummaryReportSchema> | null | undefined;
  readonly cost?: CostReport | undefined;
}

/** Fit's own response fields the record reads. */
export type FitExtra = Pick<FitAnswer, 'artifacts' | 'summary' | 'cost'>;

/** What the fit request said about the call. */
export interface FitAsked {
  readonly conversation_id?: string | undefined;
  readonly model?: string | undefined;
  readonly context_window?: number | undefined;
  readonly dry_run?: boolean | undefined;
}

/**
 * A fit call's entry: reduced when applied (its prefix broken at the first message it changed),
 * unchanged otherwise (`reason` says why); its bill fit's own estimate of the coming call's input
 * (as reduced plus the summarizer's bill, against as is).
 */
export function fitEntry(asked: FitAsked, answer: FitAnswer, ms: number, textId: string | null): CallInput {
  const changed = answer.applied ? answer.actions.find((a) => a.action !== 'keep') : undefined;
  const cost = answer.cost;
  const summary = answer.applied ? answer.summary : undefined;
  return {
    via: 'fit',
    provider: answer.format,
    format: answer.format,
    model: asked.model ?? null,
    outcome: answer.applied ? 'reduced' : 'unchanged',
    reason: answer.applied ? null : (answer.reason ?? null),
    tokens: {
      client: answer.tokens.before,
      forwarded: answer.tokens.after,
      window: resolveModel(asked.model, asked.context_window).contextWindow ?? null,
      rewritten: answer.applied && cost ? cost.rewrite_tokens : 0,
    },
    prefix: { kept: changed === undefined, broken_at: changed ? changed.index : null },
    ms_before_forwarding: ms,
    artifacts: answer.applied
      ? (answer.artifacts ?? []).map((a) => ({
          id: a.id,
          kind: a.kind,
          tool_name: a.tool_name,
          message_index: a.message_index,
          tokens: a.tokens,
        }))
      : [],
    summaries: summaryEntries(summary, textId),
    cost: cost
      ? {
          unit: cost.unit,
          usd: answer.applied ? cost.next_call.reduced + cost.summarizer_cost : cost.next_call.as_is,
          straight_usd: cost.next_call.as_is,
          source: 'estimate',
        }
      : null,
  };
}

/**
 * Records a fit call that names a conversation (not a dry run). Never fails the call: the store's
 * failures are logged by the artifact service and the call is simply not recorded.
 */
export async function recordFit(
  conversations: ConversationService,
  caller: Caller,
  asked: FitAsked,
  answer: FitAnswer,
  ms: number,
): Promise<void> {
  if (!asked.conversation_id || asked.dry_run === true) return;
  const text = answer.applied && answer.summary ? await conversations.keepSummaryText(caller, answer.summary.text) : null;
  await conversations.record(caller, asked.conversation_id, fitEntry(asked, answer, ms, text));
}

/** The summary a call made, as its record lists it (none: empty), `textId` where its text was kept. */
export function summaryEntries(
  summary:
    | { id: string; message_index: number; covered_messages: number; summarizer: CallInput['summaries'][number]['summarizer'] }
    | null
    | undefined,
  textId: string | null,
): CallInput['summaries'] {
  if (!summary) return [];
  const { id, message_index, covered_messages, summarizer } = summary;
  return [{ id, text_id: textId, message_index, covered_messages, summarizer }];
}
