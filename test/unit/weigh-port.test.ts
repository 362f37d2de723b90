import { MessageChannel } from 'node:worker_threads';
import t from 'tap';
import { CompactorError } from '../../src/errors.js';
import { serveWeigh, weighOver } from '../../src/service/weigh-port.js';

/**
 * A worker's MCP read weighs what it loaded on the main thread's ledger, over its task's port
 * (issue 39 #1): counted there in order, and a refusal comes back as the same coded error.
 */
t.test('what a worker weighs is counted on the other end; a refusal comes back as the same error', async (t) => {
  const { port1, port2 } = new MessageChannel();
  t.teardown(() => {
    port1.close();
    port2.close();
  });
  const counted: number[] = [];
  serveWeigh(port1, (chars) => {
    if (counted.reduce((a, b) => a + b, 0) + chars > 100) {
      throw new CompactorError('CMP_ERR_OVERLOADED', 'the weight in flight would pass the limit', undefined, {
        retryAfterSeconds: 3,
      });
    }
    counted.push(chars);
  });
  const weigh = weighOver(port2);
  await weigh(40);
  await weigh(50);
  t.same(counted, [40, 50], 'each weighed on the main thread, in order');
  const refused = await weigh(20).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.ok(refused instanceof CompactorError, 'refused with a CompactorError');
  t.match(refused, { code: 'CMP_ERR_OVERLOADED', retryAfterSeconds: 3, message: /would pass the limit/ });
  t.same(counted, [40, 50], 'and nothing counted for it');
  // An error that is not the ledger's own is not passed on as it is (no message of another kind crosses).
  const { port1: a, port2: b } = new MessageChannel();
  t.teardown(() => {
    a.close();
    b.close();
  });
  serveWeigh(a, () => {
    throw new Error('something else');
  });
  await t.rejects(weighOver(b)(1), { code: 'CMP_ERR_INTERNAL' });
});
