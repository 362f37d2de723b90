import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FakeProvider } from '../fake-provider.js';
import { redactSecrets } from '../provider/redact.js';
import type { JsonObject, RecordedRequest } from '../provider/types.js';
import { AGENTS } from './agents.js';
import { CLIENTS, type ClientName } from './catalog.js';
import { installClient } from './install.js';

/** The prompt a run gives by default: the fake provider's scenario decides what happens anyway. */
export const DEFAULT_PROMPT = 'Run the shell commands you are asked for, then say what you found.';

/** Options of one agent run. */
export interface RunOptions {
  /** The API root the client sends to (a fake provider's `url`, a proxy's `…/anthropic`); see `AgentContext.baseUrl`. */
  baseUrl: string;
  prompt?: string;
  /** Added to (and overriding) the runner's environment. */
  env?: Record<string, string>;
  /** Default 120 s; the process group is killed when it passes. */
  timeoutMs?: number;
  /** Default the pinned version (installed into the cache when missing). */
  version?: string;
  /** The credential the client sends (default: a random fake key shaped like the provider's). */
  apiKey?: string;
  model?: string;
  codexConfig?: string;
  opencodeConfig?: JsonObject;
  /** An MCP server the agent connects to as `compactor` (see `AgentContext.mcpUrl`). */
  mcpUrl?: string;
  /**
   * Default true: proxy variables point at a closed local port and exempt only the base URL's
   * host, so anything but the base URL fails fast instead of reaching the network.
   */
  offline?: boolean;
}

/** What one run did. `stdout` and `stderr` have the key replaced by `<redacted>`. */
export interface ClientRun {
  client: ClientName;
  version: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  durationMs: number;
  stdout: string;
  stderr: string;
  /** The key the client was given, to compare with what arrived upstream; never print it. */
  apiKey: string;
}

/** The environment every agent starts from: no variable of the calling process but PATH and locale. */
function baseEnv(home: string, baseUrl: string, offline: boolean): Record<string, string> {
  const env: Record<string, string> = {
    // Codex's launcher is a node script: the running node comes first.
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    TMPDIR: tmpdir(),
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
  };
  if (offline) {
    const dead = 'http://127.0.0.1:9';
    const local = ['127.0.0.1', 'localhost', '::1', new URL(baseUrl).hostname].join(',');
    Object.assign(env, { HTTP_PROXY: dead, HTTPS_PROXY: dead, ALL_PROXY: dead, NO_PROXY: local });
    Object.assign(env, { http_proxy: dead, https_proxy: dead, all_proxy: dead, no_proxy: local });
  }
  return env;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Kills a process group, ignoring one that is gone. */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * Runs an agent once, non-interactively, in a fresh HOME and working folder (both removed after),
 * installing its version first when the cache lacks it. The agent runs in a process group of its
 * own: past `timeoutMs` the whole group is killed, and so is anything it left running after it
 * exited. Never throws for the agent's own failure: see `exitCode`, `timedOut` and `stderr`.
 */
export async function runClient(name: ClientName, options: RunOptions): Promise<ClientRun> {
  const version = options.version ?? CLIENTS[name].pinned;
  const installed = await installClient(name, version);
  const agent = AGENTS[name];
  const apiKey = options.apiKey ?? `${agent.keyPrefix}${randomBytes(16).toString('hex')}`;
  const home = await mkdtemp(join(tmpdir(), `compactor-${name}-home-`));
  const cwd = await mkdtemp(join(tmpdir(), `compactor-${name}-work-`));
  try {
    const setup = await agent.setup({
      home,
      cwd,
      baseUrl: options.baseUrl,
      apiKey,
      prompt: options.prompt ?? DEFAULT_PROMPT,
      ...(options.model === undefined ? {} : { model: options.model }),
      ...(options.codexConfig === undefined ? {} : { codexConfig: options.codexConfig }),
      ...(options.opencodeConfig === undefined ? {} : { opencodeConfig: options.opencodeConfig }),
      ...(options.mcpUrl === undefined ? {} : { mcpUrl: options.mcpUrl }),
    });
    const env = { ...baseEnv(home, options.baseUrl, options.offline ?? true), ...setup.env, ...options.env };
    const started = performance.now();
    const child = spawn(installed.bin, setup.args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child.pid);
    }, options.timeoutMs ?? 120_000);
    const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
    const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code, sig) => resolve([code, sig]));
    }).finally(() => clearTimeout(timer));
    // The output is complete once the pipes close; a leftover process holding them open is killed.
    await Promise.race([closed, delay(2000)]);
    killGroup(child.pid);
    await Promise.race([closed, delay(2000)]);
    const durationMs = performance.now() - started;
    const secrets = [apiKey];
    return {
      client: name,
      version,
      exitCode,
      signal,
      timedOut,
      durationMs,
      stdout: redactSecrets(stdout, secrets),
      stderr: redactSecrets(stderr, secrets),
      apiKey,
    };
  } finally {
    await rm(home, { recursive: true, force: true });
    await rm(cwd, { recursive: true, force: true });
  }
}

/** One agent run against a fake provider and the requests it sent. */
export interface Capture {
  run: ClientRun;
  /** The model calls the run made, in order (token counts and other paths left out). */
  requests: RecordedRequest[];
  /** Every request the run made, model calls included. */
  all: RecordedRequest[];
}

/**
 * Runs an agent against a fake provider (`provider`, else a new one with the default scenario,
 * stopped after) and returns what it sent. With a shared provider, only the requests that arrived
 * during this run are returned: run one agent at a time on it.
 */
export async function captureClient(
  name: ClientName,
  options: Omit<RunOptions, 'baseUrl'> & { provider?: FakeProvider } = {},
): Promise<Capture> {
  const { provider: given, ...rest } = options;
  const provider = given ?? (await new FakeProvider().start());
  try {
    const since = provider.requests.length;
    const run = await runClient(name, { ...rest, baseUrl: provider.url });
    const all = provider.requests.slice(since);
    return { run, requests: all.filter((r) => r.endpoint === 'model'), all };
  } finally {
    if (!given) await provider.stop();
  }
}
