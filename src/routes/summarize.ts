import type { FastifyInstance } from 'fastify';
import { operationRoute, STORE_PROBLEMS, SUMMARIZER_PROBLEMS } from './operation-route.js';

export default async function summarizeRoutes(app: FastifyInstance): Promise<void> {
  operationRoute(app, {
    url: '/v1/summarize',
    tags: ['strategies'],
    problems: { ...SUMMARIZER_PROBLEMS, ...STORE_PROBLEMS },
    summary: 'Summaries: rolling (one summary of older history) or sections (per-section summaries)',
    description:
      'Keeps the head, the first user message and the tail (`keep`, moved back to a safe boundary, never forward) and replaces the range between them with one summary, written by the configured LLM (any OpenAI-compatible server) or, with none configured, by the deterministic extractive summarizer (`summary.summarizer`). An earlier summary of ours is folded into the new one: exactly one ever exists. Exact identifiers of the range that the summary dropped are appended under "Key references" (`summary.facts`). The range is offloaded as an artifact the summary names, so `POST /v1/expand` gives the full transcript back; `artifacts` lists it (with `store: inline`, with its content, nothing stored: pass it to expand). Identical requests are served from the summary cache (`summary.cached`, nothing billed). Placement: `summary_role` user (default), system (OpenAI formats only) or pair; in formats whose roles alternate (Anthropic, Gemini) a user summary that would follow a user message joins it as an extra text block (an action `rewrite`). `on_failure`: keep (history unchanged, `reason: summarizer_failed`), window (the sliding window stands in, `fallback`), error (502/503/504). An empty or failed summary is never committed. Sections mode (`mode: sections`): every section but the newest `keep_sections` becomes its header plus one summary pair; kept sections have oversized pairs and, past `max_section_tokens`, their oldest pairs summarized; past `qa` limits the older sections merge. A summary pair is a synthetic `compactor_summary` tool exchange where the summarized pairs used tools (openai-chat, openai-responses; gemini inside a section, with the placeholder thought signature in the current turn), else an assistant message starting with `[compactor:section-summary …]` (always in anthropic, whose tool_use blocks must name declared tools). A second run over the output changes nothing and calls no LLM.',
  });
}
