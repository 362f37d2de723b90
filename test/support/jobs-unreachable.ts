/**
 * A BullMQ queue whose Redis does not answer (the URL is the first argument), in its own process
 * because BullMQ's own connections keep retrying after `close` gives up on them. Prints one JSON
 * line with what each call did, then exits.
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
process.exit(0);
