import type { z } from 'zod';
import type { TokensReport } from '../contract/parts.js';
import { CompactorError, fieldError } from '../errors.js';
import { detectFormat } from '../formats/detect.js';
import { formatByName } from '../formats/registry.js';
import type { FormatAdapter } from '../history/format.js';
import { checkDepth } from '../history/limits.js';
import { type PreparedHistory, prepareHistory } from '../history/prepared.js';
import type { Item, Warning } from '../history/types.js';
import type { HistoryRequest } from '../schemas/common.js';
import type { TokenCounter } from '../tokens/counter.js';
import { relieveEncoders } from '../tokens/encoders.js';
import { type ModelProfile, resolveModel } from '../tokens/models.js';
import { checkUsage, occupancyFromUsage } from '../tokens/occupancy.js';

/** The fields of a request that carry a history (trigger and dry run optional: not every endpoint takes them). */
export type HistoryInput = Omit<HistoryRequest, 'trigger' | 'dry_run' | 'recall_tool'> &
  Partial<Pick<HistoryRequest, 'trigger' | 'dry_run' | 'recall_tool'>>;

export type Counting = z.output<typeof TokensReport>['counting'];

export interface Prepared extends PreparedHistory {
  readonly profile: ModelProfile;
  readonly system: number;
  readonly tools: number;
  /** Counted tokens of everything: messages, system, tools and request framing. */
  readonly total: number;
  readonly counting: Counting;
  readonly warnings: Warning[];
}

/** Detects (or takes) the format and parses every message; a malformed one is a 400. */
export function parseHistory(req: Pick<HistoryInput, 'messages' | 'format'>): {
  format: FormatAdapter;
  items: Item[];
  warnings: Warning[];
} {
  // A request starts with the tokenizers' merge caches emptied if an earlier one filled them.
  relieveEncoders();
  const format = req.format ? formatByName(req.format) : detectFormat(req.messages);
  if (!format) throw fieldError('CMP_ERR_REQUEST_VALIDATION', 'format', `unknown format ${JSON.stringify(req.format)}`);
  // Nothing else walks a message recursively before the response is serialized: guard it here.
  for (let i = 0; i < req.messages.length; i++) checkDepth(req.messages[i], 'messages', i);
  const { items, warnings } = format.parse(req.messages);
  return { format, items, warnings };
}

/**
 * The fields that run parallel to `messages` must match it, on every endpoint that takes a
 * history (whether or not it reads them): `run_ids` one per message, `usage` with a total and
 * `messages_covered` within the history. 400 `CMP_ERR_OPTIONS_INVALID` naming the field.
 */
export function checkParallel(req: Pick<HistoryInput, 'run_ids' | 'usage'>, length: number): void {
  if (req.run_ids && req.run_ids.length !== length) {
    throw fieldError('CMP_ERR_OPTIONS_INVALID', 'run_ids', `has ${req.run_ids.length} entries for ${length} messages`);
  }
  if (req.usage) checkUsage(req.usage, length);
}

/** Parses, rejects a history that breaks its format's rules, groups and counts it. */
export function prepareRequest(req: HistoryInput, counter: TokenCounter): Prepared {
  const { format, items, warnings } = parseHistory(req);
  const violations = format.violations(items);
  if (violations.length > 0) {
    throw new CompactorError(
      'CMP_ERR_HISTORY_STRUCTURE',
      `the history breaks ${violations.length} structural rule(s) of ${format.name}; first: messages[${violations[0]?.index}] ${violations[0]?.rule}`,
      violations.map((v) => ({ path: `messages[${v.index}]`, message: `${v.rule}: ${v.message}` })),
    );
  }
  checkParallel(req, items.length);
  const profile = resolveModel(req.model, req.context_window);
  const counts = counter.countMessages(format, profile, req.messages);
  const system = counter.countSystem(format, profile, req.system);
  const tools = counter.countTools(profile, req.tools);
  let total = system + tools + format.framing.perRequest;
  for (const c of counts) total += c;
  const occupancy = req.usage ? occupancyFromUsage(req.usage, counts) : total;
  const base = profile.exact ? 'exact' : 'estimated';
  return {
    ...prepareHistory({ format, messages: req.messages, items, counts, runIds: req.run_ids, occupancy }),
    profile,
    system,
    tools,
    total,
    counting: req.usage ? `usage+${base}` : base,
    warnings,
  };
}

/** Whether the request's trigger (if any) is reached: occupancy, message count or a fraction of the window. */
export function triggered(req: HistoryInput, h: Prepared): boolean {
  const t = req.trigger;
  if (!t) return true;
  if (t.tokens !== undefined && h.occupancy >= t.tokens) return true;
  if (t.messages !== undefined && h.items.length >= t.messages) return true;
  if (t.fraction !== undefined) {
    const window = h.profile.contextWindow;
    if (window === undefined) {
      throw fieldError(
        'CMP_ERR_OPTIONS_INVALID',
        'trigger.fraction',
        `the context window of model ${JSON.stringify(req.model ?? null)} is unknown; set context_window`,
      );
    }
    if (h.occupancy >= t.fraction * window) return true;
  }
  return false;
}
