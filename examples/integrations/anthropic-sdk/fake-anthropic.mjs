/**
 * This example's script for the shared fake Anthropic Messages API (../shared/fake-anthropic.mjs,
 * which the Vercel AI SDK example uses too): for each task (one real user message), the files the
 * model reads, then its answer.
 */
import { startFakeAnthropic as start } from '../shared/fake-anthropic.mjs';

export { tokensOf, violation } from '../shared/fake-anthropic.mjs';

/** @type {{reads: string[], answer: string}[]} */
export const SCRIPT = [
  {
    reads: ['src/server.ts', 'src/routes/fit.ts', 'src/store/memory.ts'],
    answer: 'The server wires Fastify routes to the fit pipeline and keeps originals in the store.',
  },
  {
    reads: ['test/fit.test.ts', 'src/cost/policy.ts', 'src/formats/anthropic.ts'],
    answer: 'DONE: the cost policy defers a reduction until its saving repays the cache rewrite.',
  },
];

/** The shared fake, answering this example's script. */
export const startFakeAnthropic = () => start(SCRIPT);
