import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { testConfig } from '../support/app.js';

/** Captures every log line as an object (pino's own test helper does the same). */
function capture(): { lines: Record<string, unknown>[]; stream: Writable } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

const CANARY = 'CANARY-7f3a9c-do-not-log';

t.test('message content, prompts and keys never reach a log line', async (t) => {
  const { lines, stream } = capture();
  const app = await buildApp(testConfig(), { logger: pino({ level: 'trace' }, stream) });
  t.teardown(() => app.close());
  const history = [
    { role: 'system', content: `system prompt ${CANARY}` },
    { role: 'user', content: `task ${CANARY}` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: CANARY }) } }],
    },
    { role: 'tool', tool_call_id: 'c1', content: `output ${CANARY}` },
    { role: 'user', content: `next ${CANARY}` },
  ];
  const requests = [
    { url: '/v1/window', payload: { messages: history, keep: { runs: 1 } } },
    { url: '/v1/tokens', payload: { messages: history } },
    { url: '/v1/validate', payload: { messages: history } },
    { url: '/v1/window', payload: { messages: [{ role: CANARY, content: CANARY }] } },
    { url: '/v1/window', payload: { messages: [{ role: 'tool', tool_call_id: CANARY, content: CANARY }] } },
    { url: '/v1/window', payload: `{"messages": [${CANARY}` },
    { url: '/v1/window', payload: { messages: history, [CANARY]: true } },
  ];
  for (const { url, payload } of requests) {
    const res = await app.inject({
      method: 'POST',
      url,
      payload,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CANARY}` },
    });
    t.ok(res.statusCode < 500, `${url} answered ${res.statusCode}`);
  }
  t.ok(lines.length >= requests.length, `${lines.length} log lines captured`);
  const leaked = lines.filter((line) => JSON.stringify(line).includes(CANARY));
  t.same(leaked, [], 'no line carries the canary');
  t.ok(
    lines.some((line) => line.code === 'CMP_ERR_HISTORY_MALFORMED'),
    'rejections are logged by code',
  );
});
