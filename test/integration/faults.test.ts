import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { build } from '../support/app.js';
import { freePort } from '../support/net.js';

const hasRedis = spawnSync('redis-server', ['--version']).status === 0;

/** A Redis of the test's own, persisting to disk so that a restart keeps what was stored. */
function startRedis(port: number, dir: string): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''],
    {
      stdio: 'ignore',
    },
  );
}

async function waitFor(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out');
}

const big = (label: string) => Array.from({ length: 80 }, (_, i) => `${label} ${i}: value ${i * 13}`).join('\n');
const history = [
  { role: 'user', content: 'task' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"a"}' } }],
  },
  { role: 'tool', tool_call_id: 'a', content: big('first') },
  {
    role: 'assistant',
    content: null,
    tool_calls: [{ id: 'b', type: 'function', function: { name: 'bash', arguments: '{"command":"b"}' } }],
  },
  { role: 'tool', tool_call_id: 'b', content: big('second') },
];

t.test(
  'the store goes away mid-run and comes back: clear errors meanwhile, nothing stored is lost, no restart needed',
  { skip: hasRedis ? false : 'redis-server is not installed' },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'compactor-redis-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    let redis = startRedis(port, dir);
    t.teardown(() => redis.kill('SIGKILL'));
    const app = await build(t, { COMPACTOR_STORE_URL: `redis://127.0.0.1:${port}/0` });
    const compact = () => app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } });
    await waitFor(async () => (await compact()).statusCode === 200);
    const first = (await compact()).json();
    const id = first.artifacts[0].id as string;

    const stopped = once(redis, 'exit');
    redis.kill('SIGTERM');
    await stopped;
    const down = await compact();
    t.equal(down.statusCode, 503, 'compaction with store server: 503 while the store is down');
    t.equal(down.json().code, 'CMP_ERR_STORE_UNAVAILABLE');
    const recall = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
    t.equal(recall.statusCode, 503);
    const window = await app.inject({ method: 'POST', url: '/v1/window', payload: { messages: history } });
    t.equal(window.statusCode, 200, 'everything that needs no store keeps working');
    const inline = await app.inject({
      method: 'POST',
      url: '/v1/compact',
      payload: { messages: history, keep_tool_uses: 1, store: 'inline' },
    });
    t.equal(inline.statusCode, 200);
    t.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200);

    redis = startRedis(port, dir);
    await waitFor(async () => (await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` })).statusCode === 200, 10_000);
    const back = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
    t.same(back.json().content, history[2], 'what was stored before the outage is still there');
    t.equal((await compact()).statusCode, 200, 'recovered without restarting the service');
  },
);
