import type { FastifyInstance } from 'fastify';
import type { z } from 'zod';
import { OPERATIONS, type Operation, type OperationUrl } from '../service/operations.js';
import { STRATEGY_KINDS, type StrategyKind } from '../strategies/registry.js';
import { operationRoute, type RouteDocs, STORE_PROBLEMS, SUMMARIZER_PROBLEMS } from './operation-route.js';

const FIT_DESCRIPTION = [
  'Fit makes the history you are about to send smaller when that lowers what your agent pays, and leaves it as it is when it does not. Call it before every model call with that history and the usage your provider reported for the previous call, and send the messages it returns.',
  'Up to three stages, each with the options object of its own endpoint: `compact`; `summarize` only while compaction leaves the history above the target (`target_tokens`, or `target_fraction` of the context window); `window` only when the summarizer failed (reported as `fallback`; `summarize.on_failure: error` answers the error instead) or the history is still above (by default a token budget that meets the target; it never drops the summary just written).',
  "When it reduces depends on `policy`. Under `cost` (the default) it reduces only where that lowers the agent's bill with its prompt cache in view: above `limit` (default: the context window minus a reply reserve) a reduction is forced down to the target (`cost.decision: forced`); under the limit, at any occupancy (even far below the target), the candidates (compaction clearing all it may at once; that plus a summary when compaction leaves the history above the target) are priced, and the one that pays most is made (`reduce`); when none pays nothing changes (`reason: does_not_pay`, `cost.decision: defer`) and `call_again_at` is the occupancy at which one will pay or be forced. A candidate pays when its saving per later call times the expected remaining calls exceeds the cached prompt it re-bills plus the summarizer's bill. Prices: `pricing`, else the built-in table for `model`; the cached prefix: from `usage`; the remaining calls: `horizon`, else estimated from the t calls the run has made (P(more than x left) = t / (t + x), counted up to 200 ahead: about 47 at t = 20), and then it must also pay back within t calls. Under `tokens`, fit reduces whenever over the target (below it: `below_trigger`), compaction stopping at it, and a stage that would free less than `min_saving_fraction` of occupancy is skipped.",
  'Prepared summaries (default with an LLM summarizer): once occupancy reaches `prepare.at`, the summary a later call will need is made off the request path (`prepared`, `GET /v1/prepared/{id}`), and the call that needs it splices it in without waiting, when its history still holds that range byte-identical; it is billed once, there (`usage.prepared`).',
  '`stages` reports each stage; billed `usage` is their sum; `cost` what the reduction costs and saves. Always a valid history: when the target cannot be met without breaking a structural rule, `warnings` says `target_not_met` with the irreducible size.',
].join('\n\n');

/** How each strategy's endpoint, `POST /v1/{kind}`, describes itself. */
const DOCS: Record<StrategyKind, Omit<RouteDocs, 'tags'>> = {
  window: {
    summary: 'Sliding window: keep the newest runs, messages or tokens',
    description:
      'Keeps the head (leading system messages), the first user message (unless `keep_first_user` is false) and the newest `keep` runs, messages or tokens; drops the rest. The cut moves back to the nearest safe boundary (never inside a tool exchange, never below the newest group, never where the format would reject the seam). `{runs: 0}` still keeps the run in flight. Never calls an LLM.',
  },
  compact: {
    summary: 'Compaction: deterministic, reversible reduction of old tool traffic',
    description:
      'Replaces old tool results (all but the newest `keep_tool_uses`, excluded tools and results under `min_tokens` left alone) with placeholders that say what was there and name the artifact holding the original; identical older results become pointers to the newest copy (`dedupe`); with `clear_tool_inputs`, large arguments of old write/edit calls are cleared; with `truncate_tokens`, old results that stay keep only their head and tail; with `clear_thinking`, thinking is removed whole outside the newest `keep_turns` turns (a turn starts at a real user message, so a tool-use loop is one; the turn in progress always keeps its thinking; a Responses reasoning item goes only when no item of its response names it by id). Stops once under `target_tokens`; does nothing when the saving is under `clear_at_least`. Never calls an LLM. Deterministic and idempotent: compacting the output again changes nothing. `POST /v1/expand` restores the original history byte-exact (thinking removal excepted).',
    problems: STORE_PROBLEMS,
  },
  summarize: {
    summary: 'Summaries: rolling (one summary of older history) or sections (per-section summaries)',
    description:
      "Keeps the head, the first user message and the tail (`keep`, moved back to a safe boundary, never forward) and replaces the range between them with one summary, written by the configured LLM (any OpenAI-compatible server) or, with none configured, by the deterministic extractive summarizer (`summary.summarizer`). An earlier summary of ours is folded into the new one: exactly one ever exists. Ours means its first line's MAC (`mac=…`, keyed by the installation secret and the caller's key) verifies over the whole summary: a marker typed by a user, printed by a tool, quoted, edited or another key's is conversation, summarized like any other message. Whatever the summarizer writes, the summary ends with the artifact trail of the range (`## Artifact trail (compactor)`: files modified, created, deleted and read, URLs, errors, constraints, tests, paths mentioned, commands with their exit status), built from the structured arguments of the tool calls and their results, merged with the trail of the summary it folds, within `trail_tokens`; other exact identifiers the summary dropped are appended under \"Key references\" (`summary.facts`: found, kept, appended, left out, by class). The range is offloaded as an artifact the summary names, so `POST /v1/expand` gives the full transcript back; `artifacts` lists it (with `store: inline`, with its content, nothing stored: pass it to expand). Identical requests are served from the summary cache (`summary.cached`, nothing billed). Placement: `summary_role` user (default), system (OpenAI formats only) or pair; in formats whose roles alternate (Anthropic, Gemini) a user summary that would follow a user message joins it as an extra text block (an action `rewrite`). `on_failure`: keep (history unchanged, `reason: summarizer_failed`), window (the sliding window stands in, `fallback`), error (502/503/504). An empty or failed summary is never committed. Sections mode (`mode: sections`): every section but the newest `keep_sections` becomes its header plus one summary pair; kept sections have oversized pairs and, past `max_section_tokens`, their oldest pairs summarized; past `qa` limits the older sections merge. A summary pair is a synthetic `compactor_summary` tool exchange where the summarized pairs used tools (openai-chat, openai-responses; gemini inside a section, with the placeholder thought signature in the current turn), else an assistant message starting with `[compactor:section-summary … mac=…]` (always in anthropic, whose tool_use blocks must name declared tools). A second run over the output changes nothing and calls no LLM.",
    problems: { ...SUMMARIZER_PROBLEMS, ...STORE_PROBLEMS },
  },
  fit: {
    summary: 'Fit: compact, then summarize if still over target, window as the last resort; only where it lowers the bill',
    // Swagger shows it, and docs/fit.md's "What fit does" is generated from it (scripts/readme-options.mjs).
    description: FIT_DESCRIPTION,
    problems: { ...SUMMARIZER_PROBLEMS, ...STORE_PROBLEMS },
  },
};

/** `POST /v1/{kind}` for every strategy, in the registry's order. */
export default async function strategyRoutes(app: FastifyInstance): Promise<void> {
  for (const kind of STRATEGY_KINDS) {
    const op: Operation<z.ZodType, z.ZodType, OperationUrl> = OPERATIONS[`/v1/${kind}`];
    operationRoute(app, op, { tags: ['strategies'], ...DOCS[kind] });
  }
}
