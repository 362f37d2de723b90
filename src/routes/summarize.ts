import type { FastifyInstance } from 'fastify';
import { SummarizeRequest, SummarizeResponse } from '../schemas/summarize.js';
import { summarizeStrategy } from '../strategies/summarize.js';
import { strategyRoute } from './strategy-route.js';

export default async function summarizeRoutes(app: FastifyInstance): Promise<void> {
  strategyRoute(app, {
    url: '/v1/summarize',
    strategy: summarizeStrategy,
    body: SummarizeRequest,
    response: SummarizeResponse,
    summary: 'Rolling summary: replace older history with one summary',
    description:
      'Keeps the head, the first user message and the tail (`keep`, moved back to a safe boundary, never forward) and replaces the range between them with one summary, written by the configured LLM (any OpenAI-compatible server) or, with none configured, by the deterministic extractive summarizer (`summary.summarizer`). An earlier summary of ours is folded into the new one: exactly one ever exists. Exact identifiers of the range that the summary dropped are appended under "Key references" (`summary.facts`). The range is offloaded as an artifact the summary names, so `POST /v1/expand` gives the full transcript back. Identical requests are served from the summary cache (`summary.cached`, nothing billed). Placement: `summary_role` user (default), system (OpenAI formats only) or pair; in formats whose roles alternate (Anthropic, Gemini) a user summary that would follow a user message joins it as an extra text block (an action `rewrite`). `on_failure`: keep (history unchanged, `reason: summarizer_failed`), window (the sliding window stands in, `fallback`), error (502/503/504). An empty or failed summary is never committed.',
  });
}
