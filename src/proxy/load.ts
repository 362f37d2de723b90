import type { FastifyInstance, FastifyReply } from 'fastify';
import { BodyShape } from '../body-shape.js';
import { requestWeight } from '../plugins/load/admission.js';

/**
 * A proxied model call weighed against the in-flight bound (`COMPACTOR_MAX_INFLIGHT_BYTES`) as a
 * `/v1` request is: its body bytes plus what its messages and objects cost once parsed, counted
 * as the bytes arrive (`BodyShape`). A call the bound has no room for is not refused: it goes
 * upstream unreduced and unparsed (`bypass; reason=load`), its body streamed through. What was
 * taken is given back when the answer ends or the client leaves, or, for a body streamed through
 * unread, once the provider has taken it whole (its answer holds nothing of it).
 */
export class ProxyLoad {
  private readonly shape = new BodyShape();
  private bytes = 0;
  private taken = 0;

  constructor(
    private readonly app: Pick<FastifyInstance, 'inflight'>,
    reply: FastifyReply,
  ) {
    reply.raw.once('close', () => this.release());
  }

  /** Takes the body's announced length ahead of reading it: false when there is no room for it. */
  announce(length: string | undefined): boolean {
    const bytes = Number(length);
    return !(Number.isFinite(bytes) && bytes > 0) || this.grow(bytes);
  }

  /** Counts one more chunk of the body: false when its weight so far no longer fits. */
  admit = (chunk: Buffer): boolean => {
    this.shape.feed(chunk);
    this.bytes += chunk.length;
    return this.grow(requestWeight(this.bytes, this.shape));
  };

  /** Gives back everything taken (once the call is forwarded unparsed, or answered). */
  release(): void {
    this.app.inflight.give(this.taken);
    this.taken = 0;
  }

  /** Takes up to `weight` in all. */
  private grow(weight: number): boolean {
    if (weight <= this.taken) return true;
    if (!this.app.inflight.take(weight - this.taken)) return false;
    this.taken = weight;
    return true;
  }
}
