import { pino } from 'pino';
import t from 'tap';
import { buildApp } from '../../src/app.js';
import { CompactorClient, CompactorHttpError } from '../../src/client.js';
import { testConfig } from '../support/app.js';

t.test('the typed client against a real listening server', async (t) => {
  const app = await buildApp(testConfig({ COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: 'client-key' }), {
    logger: pino({ level: 'silent' }),
  });
  t.teardown(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no port');
  const client = new CompactorClient({ baseUrl: `http://127.0.0.1:${address.port}/`, apiKey: 'client-key' });
  const big = Array.from({ length: 120 }, (_, i) => `line ${i}: value ${i * 7}`).join('\n');
  const messages = [
    { role: 'user', content: 'task' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'a', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    },
    { role: 'tool', tool_call_id: 'a', content: big },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'b', type: 'function', function: { name: 'bash', arguments: '{"command":"ls -la"}' } }],
    },
    { role: 'tool', tool_call_id: 'b', content: 'done' },
  ];
  const tokens = await client.tokens({ messages });
  t.equal(tokens.format, 'openai-chat');
  const compacted = await client.compact({ messages, keep_tool_uses: 1 });
  t.equal(compacted.applied, true);
  const artifact = await client.artifact(compacted.artifacts[0]?.id ?? '');
  t.same(artifact.content, messages[2]);
  const expanded = await client.expand({ messages: compacted.messages });
  t.same(expanded.messages, messages);
  const fitted = await client.fit({ messages, target_tokens: 100 });
  t.ok(fitted.tokens.after <= fitted.tokens.before);
  t.equal((await client.validate({ messages })).valid, true);
  t.equal((await client.window({ messages, keep: { runs: 1 } })).format, 'openai-chat');
  t.equal((await client.summarize({ messages, keep: { messages: 2 } })).format, 'openai-chat');
  const error = await client.artifact('art_0123456789abcdef01234567').catch((e: unknown) => e);
  t.ok(error instanceof CompactorHttpError && error.status === 404 && error.problem?.code === 'CMP_ERR_ARTIFACT_NOT_FOUND');
  const anonymous = new CompactorClient({ baseUrl: `http://127.0.0.1:${address.port}` });
  const denied = await anonymous.tokens({ messages }).catch((e: unknown) => e);
  t.ok(denied instanceof CompactorHttpError && denied.status === 401);
});
