import { createHash } from 'node:crypto';
import { CONVERSATION_ID } from '../contract/conversation-id.js';
import type { PriceTable } from '../cost/prices.js';
import { fieldError } from '../errors.js';
import type { ArtifactKind } from '../history/artifact-kinds.js';
import type { ConversationDetailView, ConversationSummaryView } from '../schemas/conversations.js';
import type { Artifact } from '../store/types.js';
import type { ArtifactService, Caller } from './artifacts.js';
import {
  type CallInput,
  detail,
  group,
  MAX_REFS,
  priceUsage,
  type StoredCall,
  type StoredUsage,
  summary,
  type UsageInput,
} from './conversation-view.js';

/** The store kinds of the conversation record (in the table of `history/artifact-kinds.ts`). */
export const CALL_KIND = 'conversation_call' as const satisfies ArtifactKind;
export const USAGE_KIND = 'conversation_usage' as const satisfies ArtifactKind;
/** The summary text a call wrote, kept so that the page can link to it (`GET /v1/artifacts/{id}`). */
export const SUMMARY_TEXT_KIND = 'summary_text' as const satisfies ArtifactKind;

/** How much one read of the records may take: the caller's newest records, in count and bytes. */
export const RECORDS_READ = { count: 1000, bytes: 4 * 1024 * 1024 };

export interface ConversationServiceOptions {
  readonly artifacts: ArtifactService;
  readonly prices: PriceTable;
  readonly now: () => number;
}

const parse = (a: Artifact): unknown => {
  try {
    return JSON.parse(a.content);
  } catch {
    return undefined;
  }
};

function isCall(v: unknown): v is StoredCall {
  const c = v as Partial<StoredCall> | null;
  return typeof c === 'object' && c !== null && c.v === 1 && typeof c.conversation === 'string' && typeof c.call === 'string';
}

function isUsage(v: unknown): v is StoredUsage {
  const u = v as Partial<StoredUsage> | null;
  return isCall(v) && typeof u?.usage === 'object' && typeof u.cost === 'object';
}

/**
 * The conversation record: one entry per model call (counts, ids and bills, never content nor
 * credentials), stored through the artifact service in the caller's scope, for the store's TTL and
 * under its cap like any artifact; reads show a conversation's newest calls (`MAX_CALLS`) among the
 * caller's newest records (`RECORDS_READ`). Each call and each usage report is one immutable
 * record, so concurrent calls never overwrite each other. Recording never fails a call: a store
 * that cannot write is logged by the artifact service and the call goes on unrecorded; reading
 * answers the store's coded problems.
 */
export class ConversationService {
  private sequence = 0;

  constructor(private readonly options: ConversationServiceOptions) {}

  /** Records one model call of `conversation`; returns the call's id (for `usage`), or null when not recorded. */
  async record(caller: Caller, conversation: string, entry: CallInput): Promise<string | null> {
    if (!CONVERSATION_ID.test(conversation)) return null;
    const at = this.options.now();
    // Unique within the process by its sequence number, across replicas by the hash of the entry.
    const digest = createHash('sha256')
      .update(`${conversation}\0${at}\0${this.sequence++}\0${JSON.stringify(entry)}`)
      .digest('hex');
    const call = `${at.toString(36)}-${digest.slice(0, 10)}`;
    const stored: StoredCall = {
      ...entry,
      artifacts: entry.artifacts.slice(0, MAX_REFS),
      summaries: entry.summaries.slice(0, MAX_REFS),
      ms_before_forwarding: Math.round(entry.ms_before_forwarding * 10) / 10,
      v: 1,
      conversation,
      call,
      at,
    };
    const failed = await this.put(caller, CALL_KIND, `conversation-call\0${conversation}\0${call}`, stored);
    return failed ? null : call;
  }

  /**
   * Records the usage the provider reported for a call recorded before, priced at the call's
   * model's prices (the price table; the format's defaults in relative units otherwise).
   */
  async usage(
    caller: Caller,
    conversation: string,
    call: string,
    entry: Pick<CallInput, 'model' | 'format' | 'tokens'>,
    usage: UsageInput,
  ): Promise<boolean> {
    const prices = this.options.prices.resolve(undefined, entry.model ?? undefined, entry.format);
    const removed = entry.tokens.client - entry.tokens.forwarded;
    const cost = priceUsage(prices, usage, removed, entry.tokens.rewritten);
    const stored: StoredUsage = { v: 1, conversation, call, usage, cost };
    return !(await this.put(caller, USAGE_KIND, `conversation-usage\0${conversation}\0${call}`, stored));
  }

  /** Keeps a summary's text where `GET /v1/artifacts/{id}` finds it; its id, or null when the store did not take it. */
  async keepSummaryText(caller: Caller, text: string): Promise<string | null> {
    const content = JSON.stringify(text);
    const { id, sha256 } = caller.address(content);
    const failed = await this.options.artifacts.persistQuietly(caller, [
      { id, kind: SUMMARY_TEXT_KIND, tool_name: null, content, sha256 },
    ]);
    return failed ? null : id;
  }

  private async put(caller: Caller, kind: string, key: string, value: object): Promise<boolean> {
    const content = JSON.stringify(value);
    const { id, sha256 } = caller.address(key);
    return this.options.artifacts.persistQuietly(caller, [{ id, kind, tool_name: null, content, sha256 }]);
  }

  private async read(caller: Caller) {
    const records = await this.options.artifacts.recent(caller, [CALL_KIND, USAGE_KIND], RECORDS_READ);
    const calls: StoredCall[] = [];
    const usage: StoredUsage[] = [];
    for (const r of records) {
      const v = parse(r);
      if (r.kind === USAGE_KIND && isUsage(v)) usage.push(v);
      else if (r.kind === CALL_KIND && isCall(v)) calls.push(v);
    }
    return group(calls, usage);
  }

  /** The caller's conversations, newest call first, `limit` from `offset`. */
  async list(
    caller: Caller,
    limit: number,
    offset: number,
  ): Promise<{ conversations: ConversationSummaryView[]; next_cursor: string | null }> {
    const all = [...(await this.read(caller)).entries()].map(([id, g]) => summary(id, g));
    all.sort((a, b) => b.last_at.localeCompare(a.last_at) || a.id.localeCompare(b.id));
    const page = all.slice(offset, offset + limit);
    return { conversations: page, next_cursor: offset + limit < all.length ? String(offset + limit) : null };
  }

  /** One conversation of the caller's; 404 `CMP_ERR_CONVERSATION_NOT_FOUND` when none of its calls is kept. */
  async get(caller: Caller, id: string): Promise<ConversationDetailView> {
    const g = CONVERSATION_ID.test(id) ? (await this.read(caller)).get(id) : undefined;
    if (!g) {
      throw fieldError('CMP_ERR_CONVERSATION_NOT_FOUND', 'id', `conversation ${JSON.stringify(id)} is unknown or has expired`);
    }
    return detail(id, g);
  }
}
