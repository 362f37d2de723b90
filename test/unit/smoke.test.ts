import t from 'tap';
import { build } from '../support/app.js';

t.test('live', async (t) => {
  const app = await build(t);
  const res = await app.inject({ method: 'GET', url: '/health/live' });
  t.equal(res.statusCode, 200);
});
