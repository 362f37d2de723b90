import t from 'tap';
import { build } from '../support/app.js';

t.test('probe', async (t) => {
  const app = await build(t);
  for (const [name, s] of [
    ['prose', 'The quick brown fox jumps over the lazy dog. '.repeat(Math.ceil(5_000_000 / 45)).slice(0, 5_000_000)],
    ['x', 'x'.repeat(5_000_000)],
    ['x200k', 'x'.repeat(200_000)],
  ] as const) {
    const t0 = Date.now();
    const r = await app.inject({
      method: 'POST',
      url: '/v1/window',
      payload: {
        messages: [
          { role: 'user', content: 'task' },
          { role: 'assistant', content: s },
          { role: 'user', content: 'more' },
        ],
      },
    });
    console.log(name, r.statusCode, Date.now() - t0, 'ms', r.body.length, r.body.slice(-400));
  }
  const small = await build(t, { COMPACTOR_BODY_LIMIT: '2048' });
  const r = await small.inject({
    method: 'POST',
    url: '/v1/tokens',
    payload: { messages: [{ role: 'user', content: 'y'.repeat(3000) }] },
  });
  console.log(r.statusCode, r.headers, r.body);
});
