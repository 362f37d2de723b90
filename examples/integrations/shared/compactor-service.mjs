/**
 * Shared by every example under examples/integrations/ (imported as ../shared/… or ../../shared/…,
 * so each example still runs alone: `cd examples/integrations/x && npm ci && npm test`). Starts
 * Compactor from this repository (`node dist/server.js`, memory store, a free port; `npm run build`
 * first when dist/ is missing) and gives a `fetch` for the client that records every request the
 * service received with its answer. Node built-ins only: no example's dependencies are needed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** @returns {Promise<number>} a port nothing listens on */
export async function freePort() {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** @returns {Promise<{url: string, stop: () => Promise<void>}>} */
export async function startCompactor() {
  if (!existsSync(`${root}dist/server.js`)) {
    const built = spawnSync('npm', ['--prefix', root, 'run', 'build'], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  const port = await freePort();
  const child = spawn(process.execPath, [`${root}dist/server.js`], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', COMPACTOR_STORE_URL: 'memory:', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  };
  // Readiness is polled until a deadline generous enough for a slow or busy machine: it only
  // catches a service that never comes up.
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`Compactor exited with ${child.exitCode}`);
    const res = await fetch(`${url}/health/ready`).catch(() => undefined);
    if (res?.ok) return { url, stop };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop();
  throw new Error('Compactor did not become ready in 180 s');
}

/**
 * A `fetch` for `new CompactorClient({fetch})` that records what the service received and answered.
 * @returns {{fetch: typeof fetch, calls: {path: string, body: any, status: number, answer: any}[]}}
 */
export function recordingFetch() {
  /** @type {{path: string, body: any, status: number, answer: any}[]} */
  const calls = [];
  /** @type {typeof fetch} */
  const recording = async (url, init) => {
    const res = await fetch(url, init);
    const text = await res.text();
    calls.push({
      path: new URL(String(url)).pathname,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
      status: res.status,
      answer: text ? JSON.parse(text) : undefined,
    });
    return new Response(text, { status: res.status, headers: res.headers });
  };
  return { fetch: recording, calls };
}
