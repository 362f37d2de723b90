// Accept starvation in plain Node (RESULTS.md, Load): a node:http server burning MS ms of CPU per
// request, 64 autocannon connections opened at once with a 170 KB body. Node 20's libuv accepts one
// connection per event-loop iteration, so without turns the last connections wait for many long
// iterations; with GATE=1 each request's work waits for its turn, one per iteration.
// Run: node bench/accept-starvation.mjs            (no turns)
//      GATE=1 node bench/accept-starvation.mjs     (one turn per iteration)
import { fork } from 'node:child_process';
import http from 'node:http';
import autocannon from 'autocannon';

const MS = Number(process.env.MS ?? 6);

if (process.argv[2] === 'server') {
  const queue = [];
  let scheduled = false;
  const next = () => {
    scheduled = false;
    queue.shift()?.();
    if (queue.length && !scheduled) {
      scheduled = true;
      setImmediate(next);
    }
  };
  const enqueue = (job) => {
    queue.push(job);
    if (!scheduled) {
      scheduled = true;
      setImmediate(next);
    }
  };
  const accepted = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const work = () => {
        const t = performance.now();
        while (performance.now() - t < MS);
        res.end('{"ok":true}');
      };
      if (process.env.GATE) enqueue(work);
      else work();
    });
  });
  server.on('connection', () => accepted.push(Date.now()));
  server.listen(0, '127.0.0.1', () => process.send(server.address().port));
  process.on('message', () => {
    const t0 = accepted[0];
    process.send(accepted.map((t) => (t - t0) / 1000));
  });
} else {
  const child = fork(new URL(import.meta.url).pathname, ['server'], { env: process.env });
  const port = await new Promise((r) => child.once('message', r));
  const r = await autocannon({
    url: `http://127.0.0.1:${port}/`,
    method: 'POST',
    body: 'x'.repeat(170_000),
    connections: 64,
    duration: 10,
  });
  child.send('report');
  const accepts = await new Promise((r) => child.once('message', r));
  console.log(
    `turns ${process.env.GATE ? 'on' : 'off'}: ${r.requests.total} requests, timeouts ${r.timeouts}, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms`,
  );
  console.log(
    `64th connection accepted after ${accepts[63]?.toFixed(2)} s; the last of ${accepts.length} after ${accepts.at(-1)?.toFixed(2)} s`,
  );
  child.kill();
}
