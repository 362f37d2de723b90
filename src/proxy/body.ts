import { Readable } from 'node:stream';

/**
 * A request body read whole, up to `limit` bytes, each chunk first `admit`ted (the in-flight
 * bound); past the limit, or once a chunk is not admitted, what was read and the rest of the
 * stream are given back as one stream, so the body can still go upstream unchanged (the proxy
 * fails open: a body it cannot reduce is forwarded, not refused).
 */
export type ReadBody = { readonly whole: Buffer } | { readonly overflow: Readable; readonly why: 'too_large' | 'load' };

export async function readBody(
  stream: Readable,
  limit: number,
  admit: (chunk: Buffer) => boolean = () => true,
): Promise<ReadBody> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  let why: 'too_large' | 'load' | undefined;
  // One iterator throughout: leaving a `for await` would destroy the stream the rest is read from.
  const iterator = stream[Symbol.asyncIterator]();
  while (why === undefined) {
    const next = await iterator.next();
    if (next.done) return { whole: Buffer.concat(chunks, bytes) };
    const chunk = next.value as Buffer;
    chunks.push(chunk);
    bytes += chunk.length;
    if (bytes > limit) why = 'too_large';
    else if (!admit(chunk)) why = 'load';
  }
  async function* rest(): AsyncGenerator<Buffer> {
    yield* chunks;
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield next.value as Buffer;
    }
  }
  return { overflow: Readable.from(rest(), { objectMode: false }), why };
}
