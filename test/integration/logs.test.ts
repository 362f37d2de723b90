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
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: CANARY }), {
    logger: pino({ level: 'trace' }, stream),
  });
  t.teardown(() => app.close());
  const history = [
    { role: 'system', content: `system prompt ${CANARY}` },
    { role: 'user', content: `task ${CANARY}` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command: CANARY }) } }],
    },
    {
      role: 'tool',
      tool_call_id: 'c1',
      content: Array.from({ length: 200 }, (_, i) => `output line ${i}: ${CANARY}`).join('\n'),
    },
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
    { url: '/v1/compact', payload: { messages: history, keep_tool_uses: 0, min_tokens: 0 } },
    { url: '/v1/summarize', payload: { messages: history, keep: { messages: 1 }, summarizer: { prompt: CANARY } } },
    { url: '/v1/fit', payload: { messages: history, target_tokens: 10 } },
    { url: '/v1/expand', payload: { messages: history } },
    { url: `/v1/tokens?key=${CANARY}`, payload: { messages: history } },
    { url: `/v1/nowhere?token=${CANARY}`, payload: { messages: history } },
  ];
  for (const { url, payload } of requests) {
    const res = await app.inject({
      method: 'POST',
      url,
      payload,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CANARY}` },
    });
    t.ok(res.statusCode < 500, `${url.split('?')[0]} answered ${res.statusCode}`);
  }
  t.ok(lines.length >= requests.length, `${lines.length} log lines captured`);
  const leaked = lines.filter((line) => JSON.stringify(line).includes(CANARY));
  t.same(leaked, [], 'no line carries the canary');
  t.ok(
    lines.some((line) => line.code === 'CMP_ERR_HISTORY_MALFORMED'),
    'rejections are logged by code',
  );
  const done = lines.filter((line) => line.msg === 'strategy done');
  t.same(
    done.map((line) => line.strategy),
    ['window', 'compact', 'summarize', 'fit'],
    'each strategy request is logged once',
  );
  t.match(done[0], {
    reqId: String,
    strategy: 'window',
    format: 'openai-chat',
    tokens_before: Number,
    tokens_after: Number,
    billed_tokens: 0,
    duration_ms: Number,
  });
  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /compactor_tokens_saved_total\{strategy="window"\}/);
  t.match(metrics.body, /compactor_summary_cache_total\{result="miss"\} 1/);
  t.match(metrics.body, /compactor_artifacts_total\{kind="tool_result"\}/);
});

t.test(
  'one startup line says what the service runs with, never a credential; a warning for a surprising configuration',
  async (t) => {
    const boot = async (env: Record<string, string>) => {
      const { lines, stream } = capture();
      const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', ...env }), {
        logger: pino({ level: 'info' }, stream),
      });
      t.teardown(() => app.close());
      await app.ready();
      return lines;
    };
    const quiet = await boot({
      COMPACTOR_UPSTREAM_OPENAI: 'https://llm.example.com:8443/tenant-path',
      OPENAI_API_KEY: 'sk-hunter2-secret',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      COMPACTOR_SUMMARIZER_MODEL: 'gpt-4o-mini',
    });
    const starting = quiet.filter((l) => l.msg === 'compactor starting');
    t.equal(starting.length, 1, 'one startup line');
    t.match(starting[0], {
      level: 30,
      store: 'memory',
      summarizer: 'llm gpt-4o-mini',
      keys: 'off',
      upstreams: { openai: 'https://llm.example.com:8443', anthropic: 'https://api.anthropic.com' },
    });
    for (const field of ['version', 'prepared_summaries', 'workers', 'body_limit', 'max_inflight_bytes'])
      t.ok(field in (starting[0] ?? {}), field);
    t.notMatch(JSON.stringify(quiet), /hunter2|tenant-path/, 'origins only');
    t.same(
      quiet.filter((l) => l.level === 40),
      [],
      'nothing to warn about on a local bind with every upstream on',
    );

    const loud = await boot({ COMPACTOR_UPSTREAM_GEMINI: 'off', HOST: '0.0.0.0', COMPACTOR_ALLOWED_HOSTS: 'compactor.internal' });
    const warnings = loud.filter((l) => l.level === 40).map((l) => String(l.msg));
    t.equal(warnings.length, 2);
    t.match(warnings[0], /COMPACTOR_UPSTREAM_GEMINI=off/);
    t.match(warnings[1], /COMPACTOR_API_KEYS is unset and HOST=0\.0\.0\.0/);
    const keyed = await boot({ HOST: '0.0.0.0', COMPACTOR_API_KEYS: 'key-a-0123456789ab' });
    t.same(
      keyed.filter((l) => l.level === 40),
      [],
      'keys on: no warning on a public bind',
    );
    t.notMatch(JSON.stringify(keyed), /key-a-0123456789ab/);
  },
);
