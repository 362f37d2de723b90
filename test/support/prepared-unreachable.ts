/**
 * The app with prepared summaries on a Redis that does not answer (the URL is the first argument)
 * and a memory artifact store, in its own process. A fit that asks to prepare (it goes on without,
 * and says so), then `GET /v1/prepared/{id}`; prints one JSON line with what they answered, and
 * must then exit by itself (issue 36: BullMQ's timers and connections used to outlive `close`).
 */
import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { openStore } from '../../src/store/index.js';
import { testConfig } from './app.js';
import { conversation, fitBody, SYSTEM } from './prepared.js';

const [url = 'redis://127.0.0.1:1'] = process.argv.slice(2);
const store = await openStore('memory:');
const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: url, COMPACTOR_SHUTDOWN_GRACE_MS: '500' }), {
  logger: pino({ level: 'silent' }),
  store,
});
await app.ready();
const fit = await app.inject({ method: 'POST', url: '/v1/fit', payload: fitBody([SYSTEM, ...conversation(12)]) });
const id = fit.json().prepared?.id ?? 'none';
const view = await app.inject({ method: 'GET', url: `/v1/prepared/${id}` });
await app.close();
process.stdout.write(
  `${JSON.stringify({
    fit: fit.statusCode,
    prepared: fit.json().prepared?.state ?? null,
    warned: fit.json().warnings.some((w: { code: string }) => w.code === 'prepared_unavailable'),
    view: view.statusCode,
    code: view.json().code,
  })}\n`,
);
