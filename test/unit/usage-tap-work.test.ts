import t from 'tap';
import { UsageTap } from '../../src/proxy/usage-tap.js';

/**
 * Counts the bytes the tap reads and copies (searches, decodes, concatenations) while `run` runs,
 * by wrapping the Buffer methods it uses: work, not time, so a busy machine cannot fail it.
 */
function bytesTouched(run: () => void): number {
  let touched = 0;
  const proto = Buffer.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const names = ['indexOf', 'lastIndexOf', 'includes', 'toString'] as const;
  const saved = names.map((name) => proto[name]);
  const concat = Buffer.concat;
  names.forEach((name, i) => {
    const original = saved[i] as (...args: unknown[]) => unknown;
    proto[name] = function (this: Buffer, ...args: unknown[]) {
      touched += this.length;
      return original.apply(this, args);
    };
  });
  Buffer.concat = (list: readonly Uint8Array[], length?: number) => {
    const result = concat(list, length);
    touched += result.length;
    return result;
  };
  try {
    run();
  } finally {
    names.forEach((name, i) => {
      proto[name] = saved[i] as (...args: unknown[]) => unknown;
    });
    Buffer.concat = concat;
  }
  return touched;
}

/** One SSE event of `size` bytes that mentions usage at its start, its usage at its end. */
function longEvent(size: number, eol = '\n'): Buffer {
  const head = `event: message_delta${eol}data: {"type":"message_delta","note":"usage soon","text":"`;
  const tail = `","usage":{"output_tokens":9}}${eol}${eol}`;
  return Buffer.from(head + 'x'.repeat(size - head.length - tail.length) + tail);
}

function feed(bytes: Buffer, size: number): Record<string, unknown> | undefined {
  const tap = new UsageTap(true);
  for (let at = 0; at < bytes.length; at += size) tap.write(bytes.subarray(at, at + size));
  return tap.end();
}

t.test('one long event that mentions usage, in 14-byte writes, is read in work linear in its bytes', async (t) => {
  for (const eol of ['\n', '\r\n']) {
    // Issue 39: 0.85 MiB in 14-byte writes took 3.6–14.7 s of CPU, the tail re-read on every write.
    const bytes = longEvent(Math.round(0.85 * 1024 * 1024), eol);
    let usage: Record<string, unknown> | undefined;
    const touched = bytesTouched(() => {
      usage = feed(bytes, 14);
    });
    t.same(usage, { output_tokens: 9 });
    // Each write reads its own bytes a few times and a few bytes around it: a bound in its
    // bytes and writes, far under the tail's size times the writes (what re-scanning costs).
    const writes = Math.ceil(bytes.length / 14);
    t.ok(touched < 12 * bytes.length + 64 * writes, `${touched} bytes touched for ${bytes.length} in ${writes} writes`);
  }
});

t.test('the work grows with the bytes, not with the bytes times the writes', async (t) => {
  const small = longEvent(64 * 1024);
  const large = longEvent(512 * 1024);
  const perByte = (bytes: Buffer) => bytesTouched(() => feed(bytes, 7)) / bytes.length;
  const ratio = perByte(large) / perByte(small);
  t.ok(ratio < 1.5, `work per byte grew ${ratio.toFixed(2)}× for 8× the bytes`);
});

t.test('many events that mention usage, written a byte at a time, are each read once', async (t) => {
  const event = 'data: {"type":"message_delta","usage":{"output_tokens":3}}\n\n';
  const bytes = Buffer.from(event.repeat(2000));
  let usage: Record<string, unknown> | undefined;
  const touched = bytesTouched(() => {
    usage = feed(bytes, 1);
  });
  t.same(usage, { output_tokens: 3 });
  t.ok(touched < 12 * bytes.length + 64 * bytes.length, `${touched} bytes touched for ${bytes.length} in as many writes`);
});
