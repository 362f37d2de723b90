import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsonObject, JsonValue } from '../provider/types.js';
import type { ClientName } from './catalog.js';

/** What an agent's setup is given: its own HOME and working folder, where to send requests, its key. */
export interface AgentContext {
  home: string;
  cwd: string;
  /**
   * The API root the client's requests go under: `<baseUrl>/v1/messages` for Anthropic clients,
   * `<baseUrl>/v1/responses` for Codex (a fake provider's `url`; a proxy's `…/anthropic` or `…/openai`).
   */
  baseUrl: string;
  apiKey: string;
  prompt: string;
  /** The model to ask for (default: each client's own). */
  model?: string;
  /** Codex: TOML lines appended to `config.toml` (e.g. `http_headers`, `request_max_retries`). */
  codexConfig?: string;
  /** opencode: merged (deeply) into `opencode.json` (e.g. `provider.anthropic.options.headers`). */
  opencodeConfig?: JsonObject;
  /** An MCP server (streamable HTTP) the agent connects to as `compactor`, its tools allowed. */
  mcpUrl?: string;
}

/** The MCP tools of Compactor's server as Claude Code names them (`mcp__<server>__<tool>`). */
export const CLAUDE_MCP_TOOLS = ['mcp__compactor__recall', 'mcp__compactor__search'];

/** How to start one agent: its arguments and the environment it needs beyond the runner's own. */
export interface AgentSetup {
  args: string[];
  env: Record<string, string>;
}

/** One agent's way of running offline against a given base URL. */
export interface Agent {
  /** A prefix that makes a fake key look like the provider's (some clients check the shape). */
  keyPrefix: string;
  /** The model the agent asks for when none is given. */
  defaultModel: string;
  /** Writes its configuration files and says how to start it. */
  setup(ctx: AgentContext): Promise<AgentSetup>;
}

function isObject(value: JsonValue | undefined): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `extra` merged into `base`, objects key by key, anything else replaced. */
export function deepMerge(base: JsonObject, extra: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(extra)) {
    const current = out[key];
    out[key] = isObject(current) && isObject(value) ? deepMerge(current, value) : value;
  }
  return out;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * Claude Code in print mode: `ANTHROPIC_BASE_URL`, an API key, no nonessential traffic, no
 * updater, and the shell and read tools allowed without asking (it refuses
 * `--dangerously-skip-permissions` as root).
 */
const claudeCode: Agent = {
  keyPrefix: 'sk-ant-api03-fake-',
  defaultModel: 'claude-opus-5-5',
  async setup(ctx) {
    const env: Record<string, string> = {
      ANTHROPIC_BASE_URL: trimSlash(ctx.baseUrl),
      ANTHROPIC_API_KEY: ctx.apiKey,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
    };
    if (ctx.model) env.ANTHROPIC_MODEL = ctx.model;
    const allowed = ['Bash', 'Read', ...(ctx.mcpUrl ? CLAUDE_MCP_TOOLS : [])].join(' ');
    const mcp = ctx.mcpUrl
      ? ['--mcp-config', JSON.stringify({ mcpServers: { compactor: { type: 'http', url: ctx.mcpUrl } } })]
      : [];
    return { args: ['-p', ctx.prompt, '--allowedTools', allowed, ...mcp], env };
  },
};

/** Codex CLI's `exec` with a custom Responses provider in `$CODEX_HOME/config.toml`, sandbox off (the test's own temp folder). */
const codex: Agent = {
  keyPrefix: 'sk-proj-fake-',
  defaultModel: 'gpt-5.5',
  async setup(ctx) {
    const codexHome = join(ctx.home, '.codex');
    await mkdir(codexHome, { recursive: true });
    const toml = [
      `model = ${JSON.stringify(ctx.model ?? codex.defaultModel)}`,
      'model_provider = "fake"',
      'check_for_update_on_startup = false',
      '',
      '[model_providers.fake]',
      'name = "fake"',
      `base_url = ${JSON.stringify(`${trimSlash(ctx.baseUrl)}/v1`)}`,
      'env_key = "OPENAI_API_KEY"',
      'wire_api = "responses"',
      ...(ctx.mcpUrl ? ['', '[mcp_servers.compactor]', `url = ${JSON.stringify(ctx.mcpUrl)}`] : []),
      ctx.codexConfig ?? '',
    ].join('\n');
    await writeFile(join(codexHome, 'config.toml'), `${toml}\n`);
    return {
      args: ['exec', '--skip-git-repo-check', '--sandbox', 'danger-full-access', ctx.prompt],
      env: { CODEX_HOME: codexHome, OPENAI_API_KEY: ctx.apiKey },
    };
  },
};

/** opencode's `run` with the Anthropic provider's `baseURL` and key in the working folder's `opencode.json`. */
const opencode: Agent = {
  keyPrefix: 'sk-ant-api03-fake-',
  defaultModel: 'anthropic/claude-sonnet-4-5',
  async setup(ctx) {
    const config = deepMerge(
      {
        provider: { anthropic: { options: { baseURL: `${trimSlash(ctx.baseUrl)}/v1`, apiKey: ctx.apiKey } } },
        model: ctx.model ?? opencode.defaultModel,
      },
      ctx.opencodeConfig ?? {},
    );
    await writeFile(join(ctx.cwd, 'opencode.json'), `${JSON.stringify(config, null, 2)}\n`);
    return {
      args: ['run', ctx.prompt],
      env: { OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_LSP_DOWNLOAD: '1' },
    };
  },
};

/** Every agent's setup, by client name. */
export const AGENTS: Record<ClientName, Agent> = { 'claude-code': claudeCode, codex, opencode };
