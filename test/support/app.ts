import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';
import { FakeOpenAI } from './fake-openai.js';

/** A config from defaults plus overrides, never from the test process's environment. */
export function testConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  // Load shedding is tested on its own: a slow CI machine must not turn ordinary tests into 503s.
  return loadConfig({
    LOG_LEVEL: 'silent',
    COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
    COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
    // Prepared summaries make summarizer calls in the background: tested on their own
    // (test/integration/prepared.test.ts), off elsewhere so that call counts stay exact.
    COMPACTOR_PREPARE: 'off',
    ...overrides,
  });
}

/** Builds the real app for one test and closes it when the test ends (fastify/demo's helper). */
export async function build(t: Test, overrides: Partial<Record<keyof Config, string>> = {}): Promise<FastifyInstance> {
  const config = testConfig(overrides);
  const app = await buildApp(config, { logger: pino({ level: 'silent' }) });
  t.teardown(() => app.close());
  await app.ready();
  return app;
}

/** A fake OpenAI-compatible server (real HTTP) for one test, stopped when the test ends. */
export async function fakeLlm(t: Pick<Test, 'teardown'>): Promise<FakeOpenAI> {
  const server = await new FakeOpenAI().start();
  t.teardown(() => server.stop());
  return server;
}

/**
 * The real app for one test with a memory store and a fake OpenAI-compatible server as its
 * summarizer (default model `summarizer-small`); both close when the test ends.
 */
export async function buildWithLlm(
  t: Test,
  overrides: Partial<Record<keyof Config, string>> = {},
): Promise<{ app: FastifyInstance; server: FakeOpenAI }> {
  const server = await fakeLlm(t);
  const app = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    OPENAI_BASE_URL: server.url,
    COMPACTOR_SUMMARIZER_MODEL: 'summarizer-small',
    ...overrides,
  });
  return { app, server };
}
