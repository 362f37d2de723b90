import t from 'tap';
import { build } from '../support/app.js';
import { listen } from '../support/net.js';
import { hasRedisServer, ownRedis } from '../support/own-redis.js';
import { conversation, fitBody, SYSTEM } from '../support/prepared.js';

/**
 * A hung Redis (paused with SIGSTOP: its connections stay open, nothing answers) holds no request:
 * with the Redis store and prepared summaries on it, fit answers while Redis is still paused,
 * 503 with `retry-after` where it needs the store, and without prepared summaries (a
 * `prepared_unavailable` warning) where they are optional; `GET /v1/prepared/{id}` answers 503.
 * Nothing here measures speed: Redis is resumed only after every answer came (or after a minute,
 * and then the answers came too late).
 */

/** The fields of an answer these tests read. */
interface Answer {
  prepared?: { id: string };
  warnings: { code: string }[];
  code?: string;
  detail?: string;
}
const read = async (res: Response) => (await res.json()) as Answer;

const skip = hasRedisServer ? false : 'redis-server is not installed';

const big = (label: string) => Array.from({ length: 80 }, (_, i) => `${label} ${i}: value ${i * 13}`).join('\n');
/** A history whose compaction offloads two tool results to the store. */
const tools = [
  { role: 'user', content: 'task' },
  ...['a', 'b', 'c'].flatMap((id) => [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id, type: 'function', function: { name: 'bash', arguments: `{"command":"${id}"}` } }],
    },
    { role: 'tool', tool_call_id: id, content: big(id) },
  ]),
];

t.test('a paused Redis: fit and GET /v1/prepared answer while it is paused', { skip }, async (t) => {
  const redis = await ownRedis(t);
  const app = await build(t, { COMPACTOR_STORE_URL: redis.url, COMPACTOR_SHUTDOWN_GRACE_MS: '500' });
  const { base } = await listen(app);
  const post = (body: unknown) =>
    fetch(`${base}/v1/fit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const history = [SYSTEM, ...conversation(12)];

  // While Redis answers: a fit that prepares gets its range queued, and the view reads it.
  const first = await post(fitBody(history));
  t.equal(first.status, 200);
  const id = (await read(first)).prepared?.id as string;
  t.ok(id, 'a summary was asked to be prepared');
  t.equal((await fetch(`${base}/v1/prepared/${id}`)).status, 200);

  redis.pause();
  let paused = true;
  const safety = setTimeout(() => {
    paused = false;
    redis.resume();
  }, 60_000);
  t.teardown(() => {
    clearTimeout(safety);
    redis.resume();
  });
  /** Each answer, and whether it came while Redis was still paused. */
  const answered = async <T>(work: Promise<T>) => {
    const value = await work;
    return { value, paused };
  };

  const [off, offload, prepare, view] = await Promise.all([
    answered(post(fitBody(history, { prepare: { enabled: false } }))),
    answered(
      post({
        messages: tools,
        format: 'openai-chat',
        policy: 'tokens',
        target_tokens: 1500,
        compact: { keep_tool_uses: 1 },
        prepare: { enabled: false },
      }),
    ),
    answered(post(fitBody([SYSTEM, ...conversation(14)]))),
    answered(fetch(`${base}/v1/prepared/${id}`)),
  ]);
  clearTimeout(safety);
  redis.resume();

  t.ok(off.paused, 'fit with prepare off answered while Redis was paused');
  t.equal(off.value.status, 200, 'it needs no Redis at all');
  t.notOk(
    (await read(off.value)).warnings.some((w) => w.code === 'prepared_unavailable'),
    'and says nothing of prepared summaries it did not want',
  );

  t.ok(offload.paused, 'fit that offloads answered while Redis was paused');
  const problem = await read(offload.value);
  t.equal(offload.value.status, 503, 'the store is needed: 503', { problem });
  t.match(offload.value.headers.get('content-type'), /^application\/problem\+json/);
  t.ok(Number(offload.value.headers.get('retry-after')) > 0, 'with retry-after');
  t.equal(problem.code, 'CMP_ERR_STORE_UNAVAILABLE');
  t.match(problem.detail, /did not answer in time|cannot be reached/);

  t.ok(prepare.paused, 'fit that would prepare answered while Redis was paused');
  t.equal(prepare.value.status, 200, 'prepared summaries are optional: it goes on without them');
  const body = await read(prepare.value);
  t.ok(
    body.warnings.some((w) => w.code === 'prepared_unavailable'),
    'and says so (prepared_unavailable)',
  );
  t.equal(body.prepared, undefined, 'no summary is claimed to be prepared');

  t.ok(view.paused, 'GET /v1/prepared/{id} answered while Redis was paused');
  t.equal(view.value.status, 503);
  t.match(view.value.headers.get('content-type'), /^application\/problem\+json/);
  t.ok(Number(view.value.headers.get('retry-after')) > 0, 'with retry-after');
  t.equal((await read(view.value)).code, 'CMP_ERR_STORE_UNAVAILABLE');

  // Resumed: the same service recovers without a restart.
  const end = Date.now() + 60_000;
  let again: Response;
  for (;;) {
    again = await fetch(`${base}/v1/prepared/${id}`);
    if (again.status === 200 || Date.now() > end) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(again.status, 200, 'the view reads the range again once Redis answers');
});
