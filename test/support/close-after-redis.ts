import { pino } from 'pino';
import { buildApp } from '../../src/app.js';
import { testConfig } from './app.js';

/**
 * Run as a child process by test/integration/close-after-redis.test.ts: builds the app on the Redis
 * at argv[2], prints `ready`, waits for a line on stdin (sent once the parent killed that Redis),
 * closes the app and prints `closed`. It must then exit by itself: a Redis client still
 * reconnecting, or a timer left running, would keep it alive.
 */
const url = process.argv[2];
if (!url) throw new Error('usage: close-after-redis.ts <redis-url>');
const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: url }), { logger: pino({ level: 'silent' }) });
await app.ready();
process.stdout.write('ready\n');
process.stdin.once('data', () => {
  process.stdin.destroy();
  app.close().then(
    () => process.stdout.write('closed\n'),
    (error: unknown) => {
      process.stdout.write(`failed ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
});
