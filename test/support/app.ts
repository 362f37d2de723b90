import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import type { Test } from 'tap';
import { buildApp } from '../../src/app.js';
import { type Config, loadConfig } from '../../src/config.js';

/** A config from defaults plus overrides, never from the test process's environment. */
export function testConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  // Load shedding is tested on its own: a slow CI machine must not turn ordinary tests into 503s.
  return loadConfig({
    LOG_LEVEL: 'silent',
    COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
    COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
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
