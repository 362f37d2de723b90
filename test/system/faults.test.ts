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

/** Polls `check` until it holds; the deadline is generous (a hang detector, not a speed limit). */
async function waitFor(check: () => Promise<boolean>, ms = 60_000): Promise<void> {
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

    const ready = () => app.inject({ method: 'GET', url: '/health/ready' });
    t.same((await ready()).json(), { status: 'ready' });

    const stopped = once(redis, 'exit');
    redis.kill('SIGTERM');
    await stopped;
    const down = await compact();
    t.equal(down.statusCode, 503, 'compaction with store server: 503 while the store is down');
    t.equal(down.json().code, 'CMP_ERR_STORE_UNAVAILABLE');
    t.match(down.json().detail, /^the redis artifact store cannot be reached \(ECONNREFUSED\); retry in 2 s$/);
    t.equal(down.headers['retry-after'], '2', 'a transient fault says when to retry');
    const recall = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
    t.equal(recall.statusCode, 503);
    t.equal(recall.headers['retry-after'], '2');
    await waitFor(async () => (await ready()).statusCode === 503);
    t.same(
      (await ready()).json(),
      { status: 'store_unavailable', reason: 'the redis store cannot be reached (ECONNREFUSED)' },
      'not ready while writes fail',
    );
    const started = Date.now();
    await Promise.all(Array.from({ length: 20 }, ready));
    t.ok(Date.now() - started < 3000, 'readiness answers promptly while the store is down');

    const window = await app.inject({ method: 'POST', url: '/v1/window', payload: { messages: history } });
    t.equal(window.statusCode, 200, 'everything that needs no store keeps working');
    for (const url of ['/v1/tokens', '/v1/validate']) {
      t.equal((await app.inject({ method: 'POST', url, payload: { messages: history } })).statusCode, 200, url);
    }
    const inline = await app.inject({
      method: 'POST',
      url: '/v1/compact',
      payload: { messages: history, keep_tool_uses: 1, store: 'inline' },
    });
    t.equal(inline.statusCode, 200);
    const restored = await app.inject({
      method: 'POST',
      url: '/v1/expand',
      payload: { messages: inline.json().messages, artifacts: inline.json().artifacts },
    });
    t.same(restored.json().messages, history, 'inline artifacts expand without the store');
    const none = await app.inject({
      method: 'POST',
      url: '/v1/compact',
      payload: { messages: history, keep_tool_uses: 1, store: 'none' },
    });
    t.equal(none.statusCode, 200, 'store none needs no store');
    t.equal((await app.inject({ method: 'GET', url: '/health/live' })).statusCode, 200);

    redis = startRedis(port, dir);
    await waitFor(async () => (await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` })).statusCode === 200);
    const back = await app.inject({ method: 'GET', url: `/v1/artifacts/${id}` });
    t.same(back.json().content, history[2], 'what was stored before the outage is still there');
    t.equal((await compact()).statusCode, 200, 'recovered without restarting the service');
    await waitFor(async () => (await ready()).statusCode === 200);
    t.same((await ready()).json(), { status: 'ready' }, 'and ready again');
  },
);

t.test(
  'a Redis that refuses writes: a read-only replica is a clear 500 (no retry), a full one a 503 with retry-after',
  { skip: hasRedis ? false : 'redis-server is not installed' },
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'compactor-redis-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const redis = startRedis(port, dir);
    t.teardown(() => redis.kill('SIGKILL'));
    const cli = (...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();
    await waitFor(async () => cli('ping') === 'PONG');
    const app = await build(t, { COMPACTOR_STORE_URL: `redis://127.0.0.1:${port}/0` });
    // Each call offloads an original never stored before: one stored a moment ago is not written
    // again (its use is marked in memory), so a call that only repeats one needs no write at all.
    let calls = 0;
    const compact = () => {
      calls++;
      const messages = history.map((m, i) => (i === 2 ? { ...m, content: `${big(`call ${calls}`)}` } : m));
      return app.inject({ method: 'POST', url: '/v1/compact', payload: { messages, keep_tool_uses: 1 } });
    };
    const ready = () => app.inject({ method: 'GET', url: '/health/ready' });
    t.equal((await compact()).statusCode, 200);
    const again = await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } });
    t.equal(again.statusCode, 200);

    // A replica of a primary that does not exist: it keeps its data and refuses every write.
    cli('replicaof', '127.0.0.1', '1');
    const repeated = await app.inject({ method: 'POST', url: '/v1/compact', payload: { messages: history, keep_tool_uses: 1 } });
    t.equal(repeated.statusCode, 200, 'a call whose originals were all just stored writes nothing: answered');
    const replica = await compact();
    t.equal(replica.statusCode, 500);
    t.equal(replica.json().code, 'CMP_ERR_STORE_FAILED');
    t.equal(
      replica.json().detail,
      'the redis artifact store is read-only (a replica: writes must go to the primary); an operator must fix it',
    );
    t.equal(replica.headers['retry-after'], undefined, 'a permanent fault gives no retry-after');
    await waitFor(async () => (await ready()).statusCode === 503);
    t.same((await ready()).json(), {
      status: 'store_failed',
      reason: 'the redis store is read-only (a replica: writes must go to the primary)',
    });
    cli('replicaof', 'no', 'one');

    cli('config', 'set', 'maxmemory', '1');
    cli('config', 'set', 'maxmemory-policy', 'noeviction');
    const full = await compact();
    t.equal(full.statusCode, 503);
    t.equal(full.json().code, 'CMP_ERR_STORE_UNAVAILABLE');
    t.match(full.json().detail, /is full \(maxmemory reached and its policy, noeviction, evicts nothing\); retry in 30 s/);
    t.equal(full.headers['retry-after'], '30');
    cli('config', 'set', 'maxmemory', '0');
    await waitFor(async () => (await ready()).statusCode === 200);
    t.equal((await compact()).statusCode, 200, 'writes resume once Redis takes them');
  },
);
