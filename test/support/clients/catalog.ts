import type { Wire } from '../provider/types.js';

/** The real agents the suite runs. */
export type ClientName = 'claude-code' | 'codex' | 'opencode';

/** One agent: its npm package, the version the suite pins, its binary and the wire it speaks. */
export interface ClientSpec {
  name: ClientName;
  pkg: string;
  /** The version the system lane runs (bump it deliberately, after `npm run capture:clients`). */
  pinned: string;
  /** The binary's name in `node_modules/.bin`. */
  bin: string;
  wire: Wire;
}

/** Every agent, by name. Each ships its binary inside its npm package: nothing is downloaded at run time. */
export const CLIENTS: Record<ClientName, ClientSpec> = {
  'claude-code': { name: 'claude-code', pkg: '@anthropic-ai/claude-code', pinned: '2.1.332', bin: 'claude', wire: 'anthropic' },
  codex: { name: 'codex', pkg: '@openai/codex', pinned: '0.171.0', bin: 'codex', wire: 'openai-responses' },
  opencode: { name: 'opencode', pkg: 'opencode-ai', pinned: '1.18.33', bin: 'opencode', wire: 'anthropic' },
};

/** The agents' names, in the order they are run and reported. */
export const CLIENT_NAMES: readonly ClientName[] = ['claude-code', 'codex', 'opencode'];
