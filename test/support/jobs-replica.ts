/**
 * A replica in its own process, for the takeover test: a BullMQ worker on the queue named by its
 * arguments (`<redis url> <prefix> <lock ms>`) whose processor says `inside <id>` on stdout and
 * then never returns. The test kills it with SIGKILL while it is inside the job.
 */
import { BullJobQueue } from '../../src/jobs/bullmq.js';

const [url = '', prefix = '', lock = '1000'] = process.argv.slice(2);
const lockDurationMs = Number(lock);

new BullJobQueue<string, string>({
  url,
  prefix,
  concurrency: 1,
  ttlSeconds: 60,
  lockDurationMs,
  stalledIntervalMs: lockDurationMs / 2,
  processor: (_data, { id }) => {
    process.stdout.write(`inside ${id}\n`);
    return new Promise<string>(() => {});
  },
});
process.stdout.write('ready\n');
