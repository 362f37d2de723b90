import { CompactorError } from '../errors.js';
import { PermanentJobError } from '../jobs/index.js';
import type { Compactor } from './compactor.js';
import type { Job } from './prepared-summaries.js';
import { parseJsonBytes } from './request-body.js';

/**
 * What a BullMQ job holds: the caller's scope and the id of the artifact that holds its
 * `/v1/summarize` body (`ref`). A job hash lives until BullMQ removes it, past the artifacts' TTL
 * and outside the store's cap: it holds no history. (`body`: a job queued by an earlier version.)
 */
export type QueuedJob = { scope: string; ref: string } | Job;

/** The artifact kind of a job's body (never listed by the MCP search, which asks for tool results). */
export const JOB_BODY_KIND = 'prepared_job_body';

/**
 * A job's scope and body, its body read from the store (a read that is a use). A body that
 * expired or was evicted before the job ran fails the job for good; a store that cannot answer
 * fails the attempt (retried). Its messages are tagged by their JSON (`content-tag.ts`), as a
 * request's are: on the replica that counted them for the fit that asked, the job finds those counts.
 */
export async function bodyOf(compactor: Compactor, job: QueuedJob): Promise<Job> {
  if ('body' in job) return job;
  try {
    const found = await compactor.artifacts.get(compactor.callerOfScope(job.scope), job.ref);
    const body = parseJsonBytes(Buffer.from(JSON.stringify(found.content))) as Record<string, unknown>;
    return { scope: job.scope, body };
  } catch (error) {
    const code = error instanceof CompactorError ? error.code : 'internal error';
    if (code === 'CMP_ERR_ARTIFACT_NOT_FOUND') throw new PermanentJobError(code);
    throw new Error(code);
  }
}
