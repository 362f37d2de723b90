import { Transform } from 'node:stream';

/**
 * Passes a request body through, calling `each` with every chunk as it arrives. Once `each` throws,
 * the rest of the body is read and dropped (no memory held) and the error ends the body: a client
 * still sending would not read an answer given mid-body.
 */
export function meter(payload: NodeJS.ReadableStream, each: (chunk: Buffer) => void): Transform {
  let refusal: Error | undefined;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (refusal) return done();
      try {
        each(chunk);
        done(null, chunk);
      } catch (error) {
        refusal = error as Error;
        done();
      }
    },
    flush(done) {
      done(refusal);
    },
  });
  return payload.pipe(counter);
}
