import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { OPT_OUT_HEADER } from '../../src/proxy/compaction/step.js';
import { CLIENTS } from './clients/catalog.js';
import { installClient } from './clients/install.js';

/**
 * The pinned agents run offline with their own auto-compaction set low, in the forms instant
 * compaction answers: Claude Code (auto-compaction from the usage it is told), Codex through a
 * custom provider (`model_providers`: local compaction) and through its built-in OpenAI provider
 * (`openai_base_url`: `compaction_trigger`). Codex's limits are top-level keys of `config.toml`,
 * which the suite's shared runner (clients/agents.ts) cannot place before its provider table:
 * hence this runner of its own.
 */

export type InstantAgent = 'claude-code' | 'codex-local' | 'codex-trigger';

export interface AgentRun {
  exitCode: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

/** The task every run is given: the text a summary must keep. */
export const PROMPT = 'Run the shell commands you are asked for, then say what you found.';

function baseEnv(home: string): Record<string, string> {
  const dead = 'http://127.0.0.1:9';
  const local = '127.0.0.1,localhost,::1';
  return {
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: home,
    TMPDIR: tmpdir(),
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    NO_COLOR: '1',
    HTTP_PROXY: dead,
    HTTPS_PROXY: dead,
    ALL_PROXY: dead,
    NO_PROXY: local,
    http_proxy: dead,
    https_proxy: dead,
    all_proxy: dead,
    no_proxy: local,
  };
}

/** What a run may add: the per-request opt-out header on every model call (not with Codex's built-in provider, which sends none of its own). */
export interface RunOptions {
  optOut?: boolean;
  timeoutMs?: number;
}

async function codexSetup(
  home: string,
  base: string,
  builtin: boolean,
  optOut: boolean,
): Promise<{ args: string[]; env: Record<string, string> }> {
  const codexHome = join(home, '.codex');
  await mkdir(codexHome, { recursive: true });
  const root = [
    'model = "gpt-5.5"',
    'check_for_update_on_startup = false',
    // The fake counts characters / 4: the prompt alone is about 15k tokens, each step's output about 4k.
    'model_context_window = 60000',
    'model_auto_compact_token_limit = 25000',
  ];
  const provider = builtin
    ? [`openai_base_url = ${JSON.stringify(`${base}/v1`)}`]
    : [
        'model_provider = "fake"',
        '',
        '[model_providers.fake]',
        'name = "fake"',
        `base_url = ${JSON.stringify(`${base}/v1`)}`,
        'env_key = "OPENAI_API_KEY"',
        'wire_api = "responses"',
        ...(optOut ? [`http_headers = { "${OPT_OUT_HEADER}" = "off" }`] : []),
      ];
  if (optOut && builtin) throw new Error("Codex's built-in provider sends no header of ours: opt out with the option");
  await writeFile(join(codexHome, 'config.toml'), `${[...root, ...provider].join('\n')}\n`);
  const key = 'sk-proj-fake-instant-compaction';
  return {
    args: ['exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access', PROMPT],
    env: { CODEX_HOME: codexHome, OPENAI_API_KEY: key, CODEX_API_KEY: key },
  };
}

function claudeSetup(base: string, optOut: boolean): { args: string[]; env: Record<string, string> } {
  return {
    args: ['-p', PROMPT, '--allowedTools', 'Bash Read'],
    env: {
      ANTHROPIC_BASE_URL: base,
      ANTHROPIC_API_KEY: 'sk-ant-api03-fake-instant-compaction',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '200000',
      CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: '50',
      ...(optOut ? { ANTHROPIC_CUSTOM_HEADERS: `${OPT_OUT_HEADER}: off` } : {}),
    },
  };
}

/** Runs one agent against `base` (a front or a proxy) until it exits or `timeoutMs` passes (its process group is then killed). */
export async function runInstantAgent(agent: InstantAgent, base: string, options: RunOptions = {}): Promise<AgentRun> {
  const { optOut = false, timeoutMs = 240_000 } = options;
  const client = agent === 'claude-code' ? 'claude-code' : 'codex';
  const installed = await installClient(client, CLIENTS[client].pinned);
  const home = await mkdtemp(join(tmpdir(), 'compactor-instant-home-'));
  const cwd = await mkdtemp(join(tmpdir(), 'compactor-instant-work-'));
  try {
    const setup =
      agent === 'claude-code' ? claudeSetup(base, optOut) : await codexSetup(home, base, agent === 'codex-trigger', optOut);
    const child = spawn(installed.bin, setup.args, {
      cwd,
      env: { ...baseEnv(home), ...setup.env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
    });
    let timedOut = false;
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    const [exitCode] = (await once(child, 'exit')) as [number | null];
    clearTimeout(timer);
    kill();
    return { exitCode, timedOut, stdout: stdout.slice(-4000), stderr: stderr.slice(-4000) };
  } finally {
    await rm(home, { recursive: true, force: true });
    await rm(cwd, { recursive: true, force: true });
  }
}
