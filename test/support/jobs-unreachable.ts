/**
 * A BullMQ queue whose Redis does not answer (the URL is the first argument), in its own process:
 * prints one JSON line with what each call did, and must then exit by itself (issue 36: BullMQ's
 * timers and connections used to outlive `close` while Redis was gone).
 */
import { BullJobQueue } from '../../src/jobs/bullmq.js';

const [url = 'redis://127.0.0.1:1'] = process.argv.slice(2);
const errors: unknown[] = [];
const q = new BullJobQueue<string, string>({
  url,
  concurrency: 1,
  ttlSeconds: 60,
  processor: async () => 'never',
  onError: (error) => errors.push(error),
});
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'resolved',
    (error: unknown) => `rejected: ${error instanceof Error ? error.name : String(error)}`,
  );
const add = await outcome(q.add('a', 'd'));
const state = await outcome(q.state('a'));
const close = await outcome(q.close(500));
process.stdout.write(`${JSON.stringify({ add, state, close, reported: errors.length > 0 })}\n`);
