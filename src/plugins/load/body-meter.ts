import { Transform } from 'node:stream';

/**
 * Passes a request body through, calling `each` with every chunk as it arrives. Once `each` throws,
 * the rest of the body is read and dropped (no memory held) and the error ends the body: a client
 * still sending would not read an answer given mid-body. An error of `payload` ends it too.
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
  // Stages chain (each plugin's preParsing hook meters what the previous one returned) and the
  // server listens only to the last: an error of an earlier one (its refusal) is passed along,
  // else it would be an unhandled 'error' event, and the process would exit.
  payload.on('error', (error: Error) => counter.destroy(error));
  return payload.pipe(counter);
}
