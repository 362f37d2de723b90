import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type ClientRun, runClient } from '../clients/run.js';
import { FakeProvider } from '../fake-provider.js';
import { type ClientRecord, clientRecords, type UpstreamRecord, upstreamRecords } from './analysis.js';
import { agentEnv, type LongAgent, PROXY_PREFIX, REDUCE_NOTHING, throughProxy, type Way, WINDOW } from './config.js';
import { figuresOf, type SessionFigures } from './figures.js';
import { Relay } from './relay.js';
import { longSession, TASK_TEXT } from './scenario.js';
import { buildKnows, ROOT, type Service, startService } from './service.js';
import { SlowSummarizer, type SummarizerCall } from './summarizer.js';

/** Options of one long session. */
export interface SessionOptions {
  /** Tool calls the fake model makes before its final answer (default 60). */
  calls?: number;
  /** How long the provider takes to answer the agent's own compaction request (default 0; issue 38's bench: 20,000 ms). */
  compactionDelayMs?: number;
  /** How long the provider takes to answer each of the agent's other calls (default 0: at once). */
  callDelayMs?: number;
  /** How long each of Compactor's summarizer calls takes (default 1,500 ms). */
  summarizerDelayMs?: number;
  /** The build to start (default `<repo>/dist`). */
  dist?: string;
  /** Extra environment for Compactor (e.g. `COMPACTOR_PROXY_BUDGET_MS`). */
  serviceEnv?: Record<string, string>;
  /** Extra `COMPACTOR_PROXY_OPTIONS` for a proxied way (e.g. `instant_compaction_share`), over the way's own. */
  proxyOptions?: Record<string, unknown>;
  /**
   * The share of the window at which the agent's own compaction starts (default `COMPACT_AT`,
   * 0.8). Through the proxy an agent sees the usage of the reduced requests: set it low to make
   * it compact anyway (issue 38).
   */
  compactAt?: number;
  /** Bound for the agent's run (default 600 s). */
  timeoutMs?: number;
}

/** One long session: how the agent ran, every request on both sides of Compactor, and the figures. */
export interface Session {
  agent: LongAgent;
  way: Way;
  window: number;
  run: ClientRun;
  upstream: UpstreamRecord[];
  client: ClientRecord[];
  summarizer: SummarizerCall[];
  figures: SessionFigures;
  /** Compactor's log lines that mention a bypass or a warning (no content: the service never logs any). */
  serviceNotes: string[];
}

/**
 * Compactor's environment for a proxied session: the fake provider upstream, the slow
 * summarizer as its LLM, a memory store. Claude Code's model is in Compactor's table (200,000):
 * `context_window` in `COMPACTOR_PROXY_OPTIONS` sets the window measured against. Codex's default
 * model is not: nothing is set for it but `COMPACTOR_DEFAULT_CONTEXT_WINDOW`, where the build
 * knows that name (an older build refuses it at boot). Way `instant`: the proxy reduces nothing
 * (`REDUCE_NOTHING`); only its instant compaction acts. `proxyOptions` go over those.
 */
export function serviceEnv(
  agent: LongAgent,
  fake: string,
  summarizer: string,
  dist: string,
  way: Way = 'proxied',
  proxyOptions: Record<string, unknown> = {},
): Record<string, string> {
  const env: Record<string, string> = {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake,
    COMPACTOR_UPSTREAM_OPENAI: fake,
    OPENAI_BASE_URL: summarizer,
    OPENAI_API_KEY: 'sk-fake-summarizer',
    COMPACTOR_SUMMARIZER_MODEL: 'fake-summarizer',
  };
  const options = {
    ...(agent === 'claude-code' ? { context_window: WINDOW[agent] } : {}),
    ...(way === 'instant' ? REDUCE_NOTHING : {}),
    ...proxyOptions,
  };
  if (Object.keys(options).length > 0) env.COMPACTOR_PROXY_OPTIONS = JSON.stringify(options);
  if (agent !== 'claude-code' && buildKnows(dist, 'COMPACTOR_DEFAULT_CONTEXT_WINDOW'))
    env.COMPACTOR_DEFAULT_CONTEXT_WINDOW = String(WINDOW[agent]);
  return env;
}

function notesOf(log: string): string[] {
  return log
    .split('\n')
    .filter((line) => /bypass|"level":\s*(40|50|60)/.test(line))
    .slice(0, 50);
}

/**
 * Runs one agent through one long session, one way: the agent → a recording relay → (Compactor →)
 * the fake provider, offline; the task is `TASK_TEXT`, the fake scripts `calls` shell calls with
 * large outputs and answers the agent's own compaction requests with a summary of about 2,000
 * tokens. Everything is stopped after; the records stay.
 */
export async function runSession(agent: LongAgent, way: Way, options: SessionOptions = {}): Promise<Session> {
  const dist = options.dist ?? join(ROOT, 'dist');
  const fake = await new FakeProvider({
    scenario: longSession({
      calls: options.calls ?? 60,
      compactionDelayMs: options.compactionDelayMs ?? 0,
      callDelayMs: options.callDelayMs ?? 0,
    }),
  }).start();
  const summarizer = await new SlowSummarizer({ delayMs: options.summarizerDelayMs ?? 1500 }).start();
  let service: Service | undefined;
  let relay: Relay | undefined;
  let cleanup: string | undefined;
  try {
    if (throughProxy(way))
      service = await startService(
        { ...serviceEnv(agent, fake.url, summarizer.url, dist, way, options.proxyOptions), ...options.serviceEnv },
        dist,
      );
    relay = await new Relay(service ? service.base : fake.url).start();
    const baseUrl = `${relay.url}${service ? PROXY_PREFIX[agent] : ''}`;
    const setup = await agentEnv(agent, way, baseUrl, options.compactAt);
    cleanup = setup.cleanup;
    const run = await runClient(agent, { baseUrl, prompt: TASK_TEXT, env: setup.env, timeoutMs: options.timeoutMs ?? 600_000 });
    const upstream = upstreamRecords(fake.requests, relay.calls, summarizer.calls);
    const client = clientRecords(relay.calls, upstream);
    const window = WINDOW[agent];
    return {
      agent,
      way,
      window,
      run,
      upstream,
      client,
      summarizer: [...summarizer.calls],
      figures: figuresOf(upstream, client, summarizer.calls, window),
      serviceNotes: service ? notesOf(service.log()) : [],
    };
  } finally {
    await relay?.stop();
    await service?.stop();
    await summarizer.stop();
    await fake.stop();
    if (cleanup) await rm(cleanup, { recursive: true, force: true });
  }
}
