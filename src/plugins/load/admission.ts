import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge } from 'prom-client';
import { BodyShape } from '../../body-shape.js';
import { CompactorError } from '../../errors.js';
import { isApiRequest } from '../app/guard.js';
import { meter } from './body-meter.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The in-flight bound, for work weighed outside `/v1`'s hooks (the proxy's bodies). */
    inflight: InflightBound;
  }
}

/** The in-flight bound as other work takes from it (`COMPACTOR_MAX_INFLIGHT_BYTES`). */
export interface InflightBound {
  /**
   * Takes `bytes` more of the bound: true when taken (one holder alone always is, unless heavier
   * than the bound itself), false when it would pass the limit (nothing taken). Always true without a limit.
   */
  take(bytes: number): boolean;
  /** Gives back `bytes` taken. */
  give(bytes: number): void;
}

export interface AdmissionOptions {
  /** Request bytes the service works on at once (`COMPACTOR_MAX_INFLIGHT_BYTES`); 0: no limit. */
  maxInflightBytes: number;
  /** Most messages (items of one top-level array) one request may hold (`COMPACTOR_MAX_MESSAGES`); 0: no cap. */
  maxMessages: number;
}

/**
 * What a request costs beyond its bytes, in body bytes of the same memory: parsed, checked, modelled
 * and rendered, a message costs about 1 KiB (a million 30-byte messages took 1 GiB) and any other
 * JSON object or array about 110 bytes, where a body byte costs about 7 (`bench/memory.mjs`). A
 * content block or tool call is modelled one by one like a message and weighs as one: 90,000 tool
 * calls in one message weighed as 90,000 small objects were admitted at a third of their memory.
 */
export const MESSAGE_WEIGHT = 160;
export const CONTAINER_WEIGHT = 16;

/**
 * A request's weight: its body bytes plus what its messages, content blocks and tool calls, and
 * other objects and arrays cost beyond them.
 */
export function requestWeight(bytes: number, shape: Pick<BodyShape, 'messages' | 'blocks' | 'containers'>): number {
  return bytes + (MESSAGE_WEIGHT - CONTAINER_WEIGHT) * (shape.messages + shape.blocks) + CONTAINER_WEIGHT * shape.containers;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Weighed by admission although not a `/v1` route (`/mcp`: its body and what its searches load). */
    admitted?: boolean;
  }
}

/** Whether admission weighs a request: every `/v1` route, and the routes that ask (`admitted`). */
const admits = (request: FastifyRequest): boolean => isApiRequest(request) || request.routeOptions.config?.admitted === true;

/** The weight of each `/v1` body counted so far: complete once the body has arrived. */
const weights = new WeakMap<FastifyRequest, number>();

/**
 * A request's weight (`requestWeight`), once its body has arrived: where it runs is chosen by it,
 * so that a small body of many messages does not keep the main thread busy.
 */
export function weightOf(request: FastifyRequest): number {
  return weights.get(request) ?? 0;
}

/** Each admitted `/v1` request's way to reserve more weight (`reserveMore`). */
const reservers = new WeakMap<FastifyRequest, (bytes: number) => void>();

/**
 * Counts `bytes` more against the in-flight limit for a request already admitted: what it will
 * produce beyond its body (an expand's restored originals). Throws 503 `CMP_ERR_OVERLOADED` with
 * `retry-after` when the weight in flight would pass the limit (one request alone always runs);
 * released with the rest of its weight. Does nothing without a limit or outside `/v1`.
 */
export function reserveMore(request: FastifyRequest, bytes: number): void {
  reservers.get(request)?.(bytes);
}

const reserved = Symbol('admission.reserved');
type Tracked = FastifyRequest & { [reserved]?: number };

/** The 413 for a request that alone holds more than the service works on. */
function tooMany(shape: BodyShape, detail: string): CompactorError {
  const path = shape.messagesKey || '(body)';
  return new CompactorError('CMP_ERR_REQUEST_TOO_MANY_MESSAGES', `${path}: ${detail}`, [{ path, message: detail }]);
}

/** The weight in flight (a gauge read from `inflight`) and the refusals (the counter returned). */
function admissionMetrics(app: FastifyInstance, inflight: () => number): Counter {
  const registers = [app.metrics.registry];
  new Gauge({
    name: 'compactor_inflight_bytes',
    help: 'Weight of the /v1 requests being worked on: body bytes plus what their messages and JSON objects cost beyond them',
    registers,
    collect() {
      this.set(inflight());
    },
  });
  return new Counter({
    name: 'compactor_admission_refused_total',
    help: '/v1 requests answered 503 because the weight in flight would pass COMPACTOR_MAX_INFLIGHT_BYTES',
    registers,
  });
}

/** What `inflightLedger` gives the hooks: reserving weight for a request, and releasing it. */
interface Ledger extends InflightBound {
  /** Counts `bytes` more for the request; throws 503 when that passes the limit (one request alone always runs). */
  reserve(request: Tracked, reply: FastifyReply, bytes: number): void;
  /** Keeps only `bytes` reserved for a request refused while its body arrives. */
  release(request: Tracked, bytes: number): void;
}

/**
 * The weight in flight against `limit`: reserved per request, released when its answer is sent or
 * its client goes away, with the refusal (503 `CMP_ERR_OVERLOADED`, `retry-after` from the recent
 * throughput) and the metrics.
 */
function inflightLedger(app: FastifyInstance, limit: number): Ledger {
  let inflight = 0;
  /** Recent throughput (weight a second), to say when to retry: an EWMA over finished requests. */
  let bytesPerSecond = 20 * 1024 * 1024;
  const refused = admissionMetrics(app, () => inflight);

  const refuse = (reply: FastifyReply, bytes: number): never => {
    refused.inc();
    const seconds = Math.min(60, Math.max(1, Math.ceil((inflight + bytes - limit) / bytesPerSecond)));
    reply.header('retry-after', String(seconds));
    throw new CompactorError(
      'CMP_ERR_OVERLOADED',
      `the service is working on ${inflight} bytes of requests; this one (${bytes} more) would pass the limit of ${limit}; retry in ${seconds} s`,
    );
  };
  const track = (request: Tracked, reply: FastifyReply): void => {
    const started = performance.now();
    request[reserved] = 0;
    reply.raw.once('close', () => {
      const total = request[reserved] ?? 0;
      inflight -= total;
      request[reserved] = 0;
      const seconds = (performance.now() - started) / 1000;
      if (total > 1024 * 1024 && seconds > 0) bytesPerSecond += 0.2 * (total / seconds - bytesPerSecond);
    });
  };
  const reserve = (request: Tracked, reply: FastifyReply, bytes: number): void => {
    if (limit <= 0 || bytes <= 0) return;
    if (request[reserved] === undefined) track(request, reply);
    const own = request[reserved] ?? 0;
    if (inflight - own > 0 && inflight + bytes > limit) refuse(reply, bytes);
    inflight += bytes;
    request[reserved] = own + bytes;
  };

  /**
   * A request refused while its body arrives keeps only `bytes` reserved (what it has buffered,
   * unparsed) until it is answered: the room its weight took is given at once to those still
   * arriving, so that requests growing side by side do not all refuse each other.
   */
  const release = (request: Tracked, bytes: number): void => {
    const own = request[reserved];
    if (own === undefined || own <= bytes) return;
    inflight -= own - bytes;
    request[reserved] = bytes;
  };

  /** Weight taken outside the hooks (the proxy's bodies): false, and nothing taken, when it does not fit. */
  const take = (bytes: number): boolean => {
    if (limit <= 0 || bytes <= 0) return true;
    if (inflight + bytes > limit && (inflight > 0 || bytes > limit)) return false;
    inflight += bytes;
    return true;
  };
  const give = (bytes: number): void => {
    if (limit > 0 && bytes > 0) inflight -= bytes;
  };

  return { reserve, release, take, give };
}

/**
 * Admission by what requests cost in memory. A history is held as received bytes, as parsed values,
 * as rewritten values and as the serialized answer, and many small messages cost far more than
 * their bytes; so every `/v1` body is counted as it arrives (`BodyShape`: one linear pass, nothing
 * kept), and a request weighs its bytes plus `MESSAGE_WEIGHT` a message, content block or tool call
 * and `CONTAINER_WEIGHT` any other object or array. A request with more than `maxMessages` messages, or heavier alone than
 * the in-flight limit, is answered 413 `CMP_ERR_REQUEST_TOO_MANY_MESSAGES` naming the field; one
 * that would take the weight in flight past the limit is answered 503 `CMP_ERR_OVERLOADED` with
 * `retry-after`: before its body is read when its content-length already does, else as soon as
 * its counts do (the rest of the body is dropped, the answer given when it ends). One request is
 * always admitted when nothing else is in flight. Weight is released when the answer is sent or the
 * client goes away.
 */
export default fp<AdmissionOptions>(
  async (app: FastifyInstance, options) => {
    const limit = options.maxInflightBytes;
    const { reserve, release, take, give } = inflightLedger(app, limit);
    app.decorate('inflight', { take, give } satisfies InflightBound);
    app.addHook('onRequest', async (request, reply) => {
      if (!admits(request)) return;
      reservers.set(request, (bytes) => reserve(request as Tracked, reply, bytes));
      const length = Number(request.headers['content-length']);
      if (Number.isFinite(length) && length > 0) reserve(request as Tracked, reply, length);
    });
    // Every body is counted as it arrives: its bytes when it came without a content-length
    // (chunked), and for all, the weight of its messages and objects.
    app.addHook('preParsing', async (request, reply, payload) => {
      if (!admits(request)) return payload;
      const chunked = request.headers['content-length'] === undefined;
      const shape = new BodyShape();
      let bytes = 0;
      let weighed = 0;
      const count = (chunk: Buffer): void => {
        shape.feed(chunk);
        bytes += chunk.length;
        if (options.maxMessages > 0 && shape.messages > options.maxMessages) {
          throw tooMany(shape, `more than ${options.maxMessages} messages (COMPACTOR_MAX_MESSAGES); send fewer at once`);
        }
        const weight = requestWeight(bytes, shape);
        weights.set(request, weight);
        if (limit > 0 && weight > limit) {
          throw tooMany(
            shape,
            `${shape.messages} messages, ${shape.blocks} content blocks and tool calls and ${shape.containers} JSON objects and arrays so far weigh ${weight} bytes of memory, over COMPACTOR_MAX_INFLIGHT_BYTES=${limit}; send fewer messages or blocks at once`,
          );
        }
        // A body with a length reserved its bytes when it arrived: only the rest of its weight is added.
        const counted = chunked ? weight : weight - bytes;
        reserve(request as Tracked, reply, counted - weighed);
        weighed = counted;
      };
      return meter(payload, (chunk) => {
        try {
          count(chunk);
        } catch (error) {
          // Refused mid-body, it will never be parsed: it holds only the bytes already received.
          release(request as Tracked, bytes);
          throw error;
        }
      });
    });
    // An answer given before the body was read (415 for a body that is not JSON, a GET with a
    // body) leaves the rest of it in the meters' pipe, which nobody reads any more; Node does not
    // drain a body that was piped, so the connection would hang: the next request on it would wait
    // behind the unread bytes. The connection closes after the answer instead.
    app.addHook('onSend', async (request, reply) => {
      if (admits(request) && !request.raw.complete) reply.header('connection', 'close');
    });
  },
  { name: 'admission', dependencies: ['problem', 'metrics', 'guard'] },
);
