import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge } from 'prom-client';
import { CompactorError } from '../errors.js';
import { meter } from './body-meter.js';
import { isApiRequest } from './guard.js';

export interface AdmissionOptions {
  /** Request body bytes the service works on at once (`COMPACTOR_MAX_INFLIGHT_BYTES`); 0: no limit. */
  maxInflightBytes: number;
}

const reserved = Symbol('admission.reserved');
type Tracked = FastifyRequest & { [reserved]?: number };

/**
 * Admission by bytes in flight. Memory grows with the bodies being worked on (a history is held as
 * received bytes, as parsed values, as rewritten values and as the serialized answer), so the
 * service bounds the sum of the bodies of the `/v1` requests it holds: one that would take the sum
 * past the limit is answered 503 `CMP_ERR_OVERLOADED` with `retry-after` before its body is read
 * (or, without a content-length, as soon as its bytes pass the limit). One request is always
 * admitted when nothing else is in flight, and the limit is at least the body limit, so the
 * largest admitted request always runs. Bytes are released when the answer is sent or the client
 * goes away.
 */
export default fp<AdmissionOptions>(
  async (app: FastifyInstance, options) => {
    const limit = options.maxInflightBytes;
    let inflight = 0;
    /** Recent throughput (bytes a second), to say when to retry: an EWMA over finished requests. */
    let bytesPerSecond = 20 * 1024 * 1024;
    const registers = [app.metrics.registry];
    new Gauge({
      name: 'compactor_inflight_bytes',
      help: 'Request body bytes of the /v1 requests being worked on',
      registers,
      collect() {
        this.set(inflight);
      },
    });
    const refused = new Counter({
      name: 'compactor_admission_refused_total',
      help: '/v1 requests answered 503 because the bytes in flight would pass COMPACTOR_MAX_INFLIGHT_BYTES',
      registers,
    });

    const refuse = (reply: FastifyReply, bytes: number): never => {
      refused.inc();
      const seconds = Math.min(60, Math.max(1, Math.ceil((inflight + bytes - limit) / bytesPerSecond)));
      reply.header('retry-after', String(seconds));
      throw new CompactorError(
        'CMP_ERR_OVERLOADED',
        `the service is working on ${inflight} bytes of requests; this one (${bytes} bytes) would pass the limit of ${limit}; retry in ${seconds} s`,
      );
    };
    const reserve = (request: Tracked, reply: FastifyReply, bytes: number): void => {
      const held = request[reserved];
      if (held === undefined) {
        const started = performance.now();
        request[reserved] = 0;
        reply.raw.once('close', () => {
          const total = request[reserved] ?? 0;
          inflight -= total;
          request[reserved] = 0;
          const seconds = (performance.now() - started) / 1000;
          if (total > 1024 * 1024 && seconds > 0) bytesPerSecond += 0.2 * (total / seconds - bytesPerSecond);
        });
      }
      const others = inflight - (request[reserved] ?? 0);
      if (others > 0 && inflight + bytes > limit) refuse(reply, bytes);
      inflight += bytes;
      request[reserved] = (request[reserved] ?? 0) + bytes;
    };

    if (limit <= 0) return;
    app.addHook('onRequest', async (request, reply) => {
      if (!isApiRequest(request)) return;
      const length = Number(request.headers['content-length']);
      if (Number.isFinite(length) && length > 0) reserve(request as Tracked, reply, length);
    });
    // Without a content-length (chunked), bytes are counted as they arrive (meter: once past the
    // limit the rest of the body is dropped and the 503 answers when it ends).
    app.addHook('preParsing', async (request, reply, payload) => {
      if (!isApiRequest(request) || request.headers['content-length'] !== undefined) return payload;
      return meter(payload, (chunk) => reserve(request as Tracked, reply, chunk.length));
    });
  },
  { name: 'admission', dependencies: ['problem', 'metrics', 'guard'] },
);
