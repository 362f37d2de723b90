import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ArtifactKind } from '../../history/artifact-kinds.js';
import type { ArtifactService, Caller } from '../../service/artifacts.js';
import type { Compactor } from '../../service/compactor.js';
import type { PreparedSummaries } from '../../service/prepared-summaries.js';
import { resolveModel } from '../../tokens/models.js';
import type { Provider, Reducible } from '../providers.js';
import { afterDigest, taskBlock } from './after.js';
import type { RecognizedCompaction } from './recognize.js';
import { keepRolling, type ReadySummary, readyRolling, rollingConversation } from './rolling.js';
import { replaceSealed, type SealClaims, sealer } from './seal.js';
import { type InstantSetting, type InstantStep, instantCompaction } from './step.js';

/**
 * Instant compaction as the proxy's front door uses it: the step (recognise, find the prepared
 * summary, answer or pass), the rolling prepared summary kept for every conversation past a share
 * of its window, and the sealed `compaction` items of the Codex trigger form put back as their
 * summary text on later requests. The sealed text is kept through the artifact service, in the
 * caller's scope, for the artifacts' TTL (the conversation state's).
 */

/** What instant compaction runs with for one proxied request. */
export interface InstantDeps {
  readonly compactor: Compactor;
  readonly preparer: PreparedSummaries;
  readonly caller: Caller;
  readonly provider: Provider;
  readonly reducible: Reducible;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly setting: InstantSetting;
  /** How long reading a prepared summary back may take (a summary-cache miss is cut there). */
  readonly readMs: number;
}

/**
 * Where the rolling prepared summary starts unless `instant_compaction_share` says: half the
 * window, measured on the call as it goes upstream (what the agent's usage reports, by which it
 * compacts), and only while the proxy has not reduced the conversation (the front door's `roll`).
 */
export const ROLLING_SHARE = 0.5;

/** `instant_compaction` and `instant_compaction_share` of the configured proxy options (request options over them). */
export function instantOptions(options: Record<string, unknown>): { setting: InstantSetting; share: number } {
  const setting = options.instant_compaction;
  const share = options.instant_compaction_share;
  return {
    setting: setting === false || setting === 'extractive' ? setting : true,
    share: typeof share === 'number' ? share : ROLLING_SHARE,
  };
}

/** The store kind of a sealed item's text (in the table of `history/artifact-kinds.ts`). */
const SEALED_KIND = 'proxy_sealed' as const satisfies ArtifactKind;

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** The sealer of the caller's scope: its key derived from the installation secret and the scope, as artifact ids are. */
function sealerOf(caller: Caller) {
  return sealer(caller.address('instant-compaction-seal').id, caller.scope);
}

/** The store id of the text a sealed item stands for. */
const sealedId = (caller: Caller, claims: SealClaims) => caller.address(`instant-sealed\0${claims.digest}`).id;

/** Keeps a trigger answer's summary text for `replaceSealed` on the conversation's later requests. */
export async function keepSealed(artifacts: ArtifactService, caller: Caller, claims: SealClaims, text: string): Promise<void> {
  const record = { id: sealedId(caller, claims), kind: SEALED_KIND, tool_name: null, content: text, sha256: sha(text) };
  await artifacts.persist(caller, [record]);
}

/** The history a compaction request summarises: its instruction (or trigger item) left out. */
export function summarisedHistory(recognized: RecognizedCompaction, history: readonly unknown[]): unknown[] {
  const out = history.slice(0, -1);
  const last = history[history.length - 1] as { content?: unknown } | undefined;
  // Claude Code's instruction is the last text block of a user message that may carry tool results first.
  if (recognized.agent === 'claude-code' && last && Array.isArray(last.content)) {
    const blocks = last.content.slice(0, -1);
    if (blocks.length > 0) out.push({ ...last, content: blocks });
  }
  return out;
}

/** Whether the request's tools offer Compactor's `recall` (by name, wherever the format puts it). */
function offersRecall(reducible: Reducible, body: Record<string, unknown>): boolean {
  const tools = reducible.toolsOf(body);
  return /"name":"recall"/.test(JSON.stringify(tools ?? null));
}

/** The step for one parsed model call, with its `find` reading the conversation's ready rolling summary. */
export async function compactionStep(
  deps: InstantDeps,
  body: Record<string, unknown>,
): Promise<{ step: InstantStep; ready: ReadySummary | undefined }> {
  let ready: ReadySummary | undefined;
  const history = body[deps.reducible.history];
  const find = async (recognized: RecognizedCompaction) => {
    if (!Array.isArray(history)) return undefined;
    const summarised = summarisedHistory(recognized, history);
    const c = rollingConversation(deps.provider, deps.reducible, body, summarised, deps.headers);
    ready = await readyRolling(deps, c, AbortSignal.timeout(deps.readMs));
    if (!ready) return undefined;
    const head = ready.head.map((i) => summarised[i]);
    const prepared = {
      summary: ready.text,
      artifactId: ready.artifactId,
      task: taskBlock(head),
      after: afterDigest([...ready.pinned.map((i) => summarised[i]), ...summarised.slice(ready.coveredTo)], head),
      recallTool: offersRecall(deps.reducible, body),
    };
    return { prepared, writtenBy: ready.writtenBy };
  };
  const model = typeof body.model === 'string' ? body.model : 'unknown';
  const step = await instantCompaction({
    provider: deps.provider.name,
    path: deps.path,
    headers: deps.headers,
    body,
    setting: deps.setting,
    find,
    context: { model, seal: (claims) => sealerOf(deps.caller).seal(claims) },
  });
  return { step, ready };
}

/**
 * Every other OpenAI `/responses` request: items sealed by this scope that verify become their
 * summary text (a user message); the rest go as sent. The body unchanged (same object) when none.
 */
export async function unsealed(
  artifacts: ArtifactService,
  caller: Caller,
  provider: Provider,
  path: string,
  body: Record<string, unknown>,
): Promise<{ body: Record<string, unknown>; replaced: number }> {
  if (provider.name !== 'openai' || !/\/responses$/.test(path) || !JSON.stringify(body.input ?? null).includes('cmpx1.'))
    return { body, replaced: 0 };
  const load = async (claims: SealClaims) => {
    const id = sealedId(caller, claims);
    const found = await artifacts.records(caller, [id]);
    return found.get(id)?.content;
  };
  const out = await replaceSealed(body, sealerOf(caller).verify, load);
  return { body: out.body as Record<string, unknown>, replaced: out.replaced + out.missing };
}

/**
 * Starts or extends the conversation's rolling prepared summary once the call is past `share` of
 * its window, as the provider sees it: `occupancy` is what fit measured of the history going
 * upstream (the provider's usage where the conversation has one), what the agent reads in its
 * usage and compacts by. The front door asks only while the proxy has not reduced the
 * conversation: once it does, the agent stays under its own limit and its compaction does not come
 * (a summary kept for it would be paid for nothing). Nothing is counted here. Never rejects.
 */
export async function rollOn(
  deps: Pick<InstantDeps, 'compactor' | 'preparer' | 'caller' | 'provider' | 'reducible' | 'headers'>,
  body: Record<string, unknown>,
  share: number,
  contextWindow: number | undefined,
  occupancy: number,
): Promise<void> {
  const history = body[deps.reducible.history];
  if (!Array.isArray(history) || history.length < 2) return;
  const model = typeof body.model === 'string' ? body.model : undefined;
  const window = resolveModel(model, contextWindow).contextWindow;
  if (!window || occupancy < share * window) return;
  await keepRolling(deps, rollingConversation(deps.provider, deps.reducible, body, history, deps.headers));
}
