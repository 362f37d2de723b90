import { spawn } from 'node:child_process';

/**
 * A prober in its own process (the bench's own process is busy building and sending large
 * bodies): it asks `GET {base}/health/live` every 10 ms until stopped, and `stop()` resolves with
 * every probe's latency in ms, in the order they were made.
 */
export function startProber(base) {
  const code = `
    const lat = [];
    let stop = false;
    process.stdin.on('data', () => { stop = true; });
    (async () => {
      while (!stop) {
        const t = performance.now();
        try { const r = await fetch('${base}/health/live'); await r.arrayBuffer(); } catch {}
        lat.push(performance.now() - t);
        await new Promise((r) => setTimeout(r, 10));
      }
      process.stdout.write(JSON.stringify(lat));
      process.exit(0);
    })();`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  return {
    async stop() {
      child.stdin.write('x');
      await new Promise((r) => child.once('exit', r));
      return JSON.parse(out);
    },
  };
}
