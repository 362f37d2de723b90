import type { BullJobQueueOptions } from './bullmq-options.js';
import type { JobQueue } from './types.js';

export { type BullJobQueueOptions, bullDefaults } from './bullmq-options.js';
export {
  JOB_RETRY,
  type JobClock,
  type JobContext,
  type JobEvent,
  type JobListener,
  type JobProcessor,
  type JobQueue,
  JobQueueClosedError,
  JobQueueUnavailableError,
  type JobState,
  type JobStatus,
  PermanentJobError,
  retries,
  systemClock,
} from './types.js';

/**
 * The BullMQ queue (`bullmq.ts`), loaded only when asked for, as the store loads its Redis: an
 * embedded sidecar never loads BullMQ. Connects in the background; see `BullJobQueue`.
 * @throws RangeError and TypeError as `BullJobQueue`'s constructor does
 */
export async function openBullJobQueue<Data, Result>(
  options: BullJobQueueOptions<Data, Result>,
): Promise<JobQueue<Data, Result>> {
  const { BullJobQueue } = await import('./bullmq.js');
  return new BullJobQueue(options);
}
