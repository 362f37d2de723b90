import { createRequire } from 'node:module';

/**
 * undici 7, loaded without taking over Node's own `fetch`. When loaded, undici installs its agent
 * as the process's global dispatcher under the symbol Node 20's bundled fetch (undici 6 inside;
 * the openai SDK's summarizer calls go through it) reads too, unless one is there already, and
 * Node 20's fetch cannot drive an undici 7 agent: its requests fail on an internal assertion.
 * So Node's own fetch is set up first (a `data:` URL, read from memory, loads it and installs its
 * agent); the proxy passes its own dispatcher on every request and never needs the global one.
 */
const LEGACY = Symbol.for('undici.globalDispatcher.1');
if ((globalThis as Record<symbol, unknown>)[LEGACY] === undefined) {
  fetch('data:,').catch(() => undefined);
}
const undici = createRequire(import.meta.url)('undici') as typeof import('undici');

export const { Agent, errors, request } = undici;
export type Agent = InstanceType<typeof undici.Agent>;
