import type { FastifyInstance } from 'fastify';
import { OPERATIONS } from '../service/operations.js';
import { operationRoute, STORE_PROBLEMS } from './operation-route.js';

/** `POST /v1/compact`: deterministic, reversible compaction. */
export default async function compactRoute(app: FastifyInstance): Promise<void> {
  operationRoute(app, OPERATIONS['/v1/compact'], {
    tags: ['strategies'],
    summary: 'Compaction: deterministic, reversible reduction of old tool traffic',
    description:
      'Replaces old tool results (all but the newest `keep_tool_uses`, excluded tools and results under `min_tokens` left alone) with placeholders that say what was there and name the artifact holding the original; identical older results become pointers to the newest copy (`dedupe`); with `clear_tool_inputs`, large arguments of old write/edit calls are cleared; with `truncate_tokens`, old results that stay keep only their head and tail; with `clear_thinking`, thinking is removed whole outside the newest `keep_turns` turns (a turn starts at a real user message, so a tool-use loop is one; the turn in progress always keeps its thinking; a Responses reasoning item goes only when no item of its response names it by id). Stops once under `target_tokens`; does nothing when the saving is under `clear_at_least`. Never calls an LLM. Deterministic and idempotent: compacting the output again changes nothing. `POST /v1/expand` restores the original history byte-exact (thinking removal excepted).',
    problems: { ...STORE_PROBLEMS },
  });
}
