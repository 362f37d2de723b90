/**
 * The proxy's usage tap alone (src/proxy/usage-tap.ts): CPU to read the usage out of a 20 MiB
 * Anthropic SSE answer, in three shapes (16 KB text deltas in 16 KB chunks, as the fake's
 * `LargeText`; 40-byte deltas in 1 KB chunks, a token-by-token stream; 40-byte deltas in 64 KB
 * chunks), against a floor that only decodes every chunk to text (the least a text-reading tap
 * does); and the adversarial stream of issue 39: one 0.85 MiB event that mentions `"usage` at its
 * start, written 14 bytes at a time (its usage at its end). Medians of TAPBENCH_RUNS runs (default
 * 9) after a warm-up; one process, nothing else.
 *
 * Usage: npm run build && node bench/usage-tap.mjs
 */
import { UsageTap } from '../dist/proxy/usage-tap.js';

const RUNS = Number(process.env.TAPBENCH_RUNS ?? 9);
const SIZE = 20 * 1024 * 1024;

function stream(deltaSize, chunkSize) {
  const text = 'x'.repeat(deltaSize);
  const delta = `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } })}\n\n`;
  const parts = ['event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":5}}}\n\n'];
  for (let n = 0; n < SIZE; n += delta.length) parts.push(delta);
  parts.push('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n');
  const all = Buffer.from(parts.join(''));
  const chunks = [];
  for (let i = 0; i < all.length; i += chunkSize) chunks.push(Buffer.from(all.subarray(i, i + chunkSize)));
  return chunks;
}

/** One event of `size` bytes that mentions usage at its start, cut into `chunkSize`-byte writes. */
function mentioning(size, chunkSize) {
  const head = 'event: message_delta\ndata: {"type":"message_delta","note":"usage soon","text":"';
  const tail = '","usage":{"input_tokens":5,"output_tokens":9}}\n\n';
  const all = Buffer.from(head + 'x'.repeat(size - head.length - tail.length) + tail);
  const chunks = [];
  for (let i = 0; i < all.length; i += chunkSize) chunks.push(Buffer.from(all.subarray(i, i + chunkSize)));
  return chunks;
}

function median(run) {
  run();
  const times = [];
  for (let r = 0; r < RUNS; r++) {
    const started = process.cpuUsage();
    run();
    const used = process.cpuUsage(started);
    times.push((used.user + used.system) / 1000);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}

console.log('| stream                        | tap ms          | decode-only floor | ratio |');
console.log('| ----------------------------- | --------------: | ----------------: | ----: |');
for (const [deltaSize, chunkSize] of [
  [16384, 16384],
  [40, 1024],
  [40, 65536],
  ['mention', 14],
]) {
  const chunks = deltaSize === 'mention' ? mentioning(Math.round(0.85 * 1024 * 1024), chunkSize) : stream(deltaSize, chunkSize);
  const tap = median(() => {
    const t = new UsageTap(true);
    for (const c of chunks) t.write(c);
    const usage = t.end();
    if (usage?.input_tokens !== 5 || usage?.output_tokens !== 9) throw new Error('usage not read');
  });
  const floor = median(() => {
    const d = new TextDecoder();
    for (const c of chunks) d.decode(c, { stream: true });
    d.decode();
  });
  const name = (
    deltaSize === 'mention' ? '0.85 MiB event, 14 B writes' : `${deltaSize} B deltas, ${chunkSize / 1024} KB chunks`
  ).padEnd(29);
  console.log(
    `| ${name} | ${tap.toFixed(1).padStart(15)} | ${floor.toFixed(1).padStart(17)} | ${(tap / floor).toFixed(2).padStart(5)} |`,
  );
}
