import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClientName } from '../clients/catalog.js';

/**
 * The ways a long session is run: straight to the provider or through Compactor, with the agent's
 * own compaction or not. `instant` (issue 38): the agent's own compaction through Compactor's proxy
 * reducing nothing, so that its compaction requests are answered by instant compaction at the same
 * points as `own` and nothing else differs.
 */
export type Way = 'straight' | 'own' | 'proxied' | 'both' | 'instant';

/** The ways run by default, in the order they are run and reported (`instant` on request). */
export const WAYS: readonly Way[] = ['straight', 'own', 'proxied', 'both'];

/** Whether a way goes through Compactor's proxy. */
export const throughProxy = (way: Way): boolean => way === 'proxied' || way === 'both' || way === 'instant';

/** Whether a way turns the agent's own auto-compaction on. */
export const ownCompaction = (way: Way): boolean => way === 'own' || way === 'both' || way === 'instant';

/**
 * The proxy options that make Compactor reduce nothing (way `instant`): fit reduces only over its
 * target under policy tokens, and the target is the whole window (the limit too: it may not be under
 * the target), which the agent's own compaction keeps the session under.
 */
export const REDUCE_NOTHING = { policy: 'tokens', target_fraction: 1, limit: { fraction: 1 } } as const;

/**
 * The context window each agent's sessions are measured against. Claude Code: 100,000, the least
 * `CLAUDE_CODE_AUTO_COMPACT_WINDOW` takes (its model's 200,000 would need twice the calls to run
 * over). Codex: 64,000 (`model_context_window`), for its default model, which Compactor's model
 * table does not know.
 */
export const WINDOW: Record<'claude-code' | 'codex', number> = { 'claude-code': 100_000, codex: 64_000 };

/** The share of the window at which the agent's own compaction starts (and Compactor's proxy limit: 0.8, its default). */
export const COMPACT_AT = 0.8;

/** The agents a long session runs. */
export type LongAgent = 'claude-code' | 'codex';

/** The long-session agents, in the order they are run and reported. */
export const LONG_AGENTS: readonly LongAgent[] = ['claude-code', 'codex'];

/** The proxy prefix each agent's base URL goes under. */
export const PROXY_PREFIX: Record<LongAgent, string> = { 'claude-code': '/anthropic', codex: '/openai' };

/**
 * Claude Code's environment for a way: its own auto-compaction at `compactAt` (default
 * `COMPACT_AT`) of `WINDOW`, or none (`DISABLE_AUTO_COMPACT=1`).
 */
export function claudeEnv(way: Way, compactAt = COMPACT_AT): Record<string, string> {
  if (!ownCompaction(way)) return { DISABLE_AUTO_COMPACT: '1' };
  return {
    CLAUDE_CODE_AUTO_COMPACT_WINDOW: String(WINDOW['claude-code']),
    CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: String(Math.round(compactAt * 100)),
  };
}

/**
 * Codex's `config.toml` exactly as the README's Codex entry writes it (a custom provider named
 * Compactor, no `model` line: Codex's default model), pointed at `baseUrl`; with its own
 * compaction, `model_context_window` and `model_auto_compact_token_limit` (`compactAt` of it) too.
 */
export function codexToml(baseUrl: string, way: Way, compactAt = COMPACT_AT): string {
  const own = ownCompaction(way)
    ? [`model_context_window = ${WINDOW.codex}`, `model_auto_compact_token_limit = ${Math.round(WINDOW.codex * compactAt)}`]
    : [];
  return [
    'model_provider = "compactor"',
    'check_for_update_on_startup = false',
    ...own,
    '',
    '[model_providers.compactor]',
    'name = "Compactor"',
    `base_url = ${JSON.stringify(`${baseUrl.replace(/\/+$/, '')}/v1`)}`,
    'env_key = "OPENAI_API_KEY"',
    'wire_api = "responses"',
    '',
  ].join('\n');
}

/**
 * The environment that makes an agent run a way: Claude Code's compaction variables, or a
 * `CODEX_HOME` of its own holding the README's `config.toml` (it overrides the runner's, which
 * names a model). The folder is left for the caller to remove (`cleanup`).
 */
export async function agentEnv(
  agent: ClientName,
  way: Way,
  baseUrl: string,
  compactAt = COMPACT_AT,
): Promise<{ env: Record<string, string>; cleanup: string | undefined }> {
  if (agent === 'claude-code') return { env: claudeEnv(way, compactAt), cleanup: undefined };
  const home = await mkdtemp(join(tmpdir(), 'compactor-long-codex-'));
  const codexHome = join(home, '.codex');
  await mkdir(codexHome, { recursive: true });
  await writeFile(join(codexHome, 'config.toml'), codexToml(baseUrl, way, compactAt));
  return { env: { CODEX_HOME: codexHome }, cleanup: home };
}
