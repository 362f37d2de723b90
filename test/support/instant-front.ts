import { once } from 'node:events';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RecognizedCompaction, recognizeCompaction } from '../../src/proxy/compaction/recognize.js';
import { replaceSealed, sealer } from '../../src/proxy/compaction/seal.js';
import { instantCompaction } from '../../src/proxy/compaction/step.js';
import type { PreparedCompaction } from '../../src/proxy/compaction/summary-text.js';
import { FakeProvider } from './fake-provider.js';
import { shellArguments, shellTool } from './provider/scenario.js';
import type { JsonValue, Reply, Scenario } from './provider/types.js';

/**
 * The instant-compaction modules in front of a fake provider, as the proxy's front door will use
 * them (test-only until the door calls them): each request is recognised; an agent's own
 * compaction request is answered from a fixed prepared summary (`PREPARED`) and never reaches the
 * provider; every other request has Compactor's sealed `compaction` items replaced by the summary
 * text they stand for (`replaceSealed`) before it is forwarded. Records what the agent sent, what
 * was recognised, and what the provider received.
 */

/** One request the agent sent, as the front saw it. */
export interface FrontRecord {
  url: string;
  headers: Record<string, string | string[] | undefined>;
  json: JsonValue | undefined;
  recognized: RecognizedCompaction | undefined;
  answered: boolean;
  /** Sealed items replaced before forwarding. */
  replaced: number;
  /** An answered request: milliseconds from its body read to its answer written (a figure, never asserted). */
  answerMs?: number;
}

/** The task text the prepared summary keeps (a later request carrying it proves the summary was taken). */
export const TASK_MARK = 'count-the-numbers-7f3a';
const ID = `art_${'5eed'.repeat(6)}`;
export const PREPARED: PreparedCompaction = {
  summary: [
    '## Goal and constraints',
    `The user asked to run the shell commands given and report (${TASK_MARK}).`,
    '## Decisions',
    'Use seq.',
    '## Done and found',
    'Ran seq several times.',
    '## Current state',
    'Some commands ran.',
    '## Remaining work',
    'Run the rest, then report.',
  ].join('\n'),
  artifactId: ID,
  after: '',
  recallTool: false,
};

/**
 * A task of `steps` shell calls counted per conversation (its session key), never restarted: a
 * compacted history, which holds no tool result any more, carries on where it was. `inflateAt`:
 * the conversation's shell-call numbers (1-based) whose answer reports `inflatedInput` prompt
 * tokens, so that an agent measuring its context from usage compacts there.
 */
export function countedSteps(steps: number, inflateAt: readonly number[] = [], inflatedInput = 0): Scenario {
  const issued = new Map<string, number>();
  return (request): Reply => {
    const tool = shellTool(request.tools);
    if (!tool) return { text: 'Counting numbers in the shell' };
    const done = issued.get(request.conversation) ?? 0;
    if (done >= steps) return { text: `Done: ran ${steps} commands.` };
    issued.set(request.conversation, done + 1);
    const reply: Reply = {
      text: `Running step ${done + 1}.`,
      toolCalls: [{ name: tool.name, input: shellArguments(tool, `seq 1 ${3000 + done}`, done) }],
    };
    return inflateAt.includes(done + 1) ? { ...reply, usage: { input: inflatedInput, cacheRead: 0, cacheWrite: 0 } } : reply;
  };
}

/** The front server and the fake provider behind it. */
export class InstantFront {
  readonly records: FrontRecord[] = [];
  readonly provider: FakeProvider;
  readonly seal = sealer('instant-front-secret', 'tenant-front');
  /** The text each sealed item stands for, by digest (what the proxy's store would hold). */
  private readonly texts = new Map<string, string>();
  private server: Server | undefined;
  url = '';

  constructor(scenario: Scenario) {
    this.provider = new FakeProvider({ scenario });
  }

  async start(): Promise<this> {
    await this.provider.start();
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.handle(req.url ?? '/', req.method ?? 'GET', req.headers, Buffer.concat(chunks), res).catch(() => res.destroy());
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
    await this.provider.stop();
  }

  private async handle(
    url: string,
    method: string,
    headers: Record<string, string | string[] | undefined>,
    raw: Buffer,
    res: import('node:http').ServerResponse,
  ): Promise<void> {
    const started = performance.now();
    let json: JsonValue | undefined;
    try {
      json = raw.length > 0 ? (JSON.parse(raw.toString('utf8')) as JsonValue) : undefined;
    } catch {
      json = undefined;
    }
    const provider = url.includes('/messages') ? 'anthropic' : 'openai';
    const record: FrontRecord = {
      url,
      headers,
      json,
      recognized: recognizeCompaction(provider, url, headers, json),
      answered: false,
      replaced: 0,
    };
    this.records.push(record);
    let body = raw;
    if (method === 'POST' && json !== undefined) {
      const model = typeof (json as { model?: unknown }).model === 'string' ? String((json as { model: string }).model) : 'm';
      const step = await instantCompaction({
        provider,
        path: url,
        headers,
        body: json,
        find: async () => ({ prepared: PREPARED, writtenBy: 'llm' }),
        context: { model, seal: this.seal.seal },
      });
      if (step.kind === 'answered') {
        record.answered = true;
        if (step.answer.sealed) this.texts.set(step.answer.sealed.digest, step.answer.text);
        res.writeHead(200, { 'content-type': step.answer.contentType, 'x-compactor': step.header }).end(step.answer.body);
        record.answerMs = performance.now() - started;
        return;
      }
      const replaced = await replaceSealed(json, this.seal.verify, async (claims) => this.texts.get(claims.digest));
      record.replaced = replaced.replaced;
      if (replaced.body !== json) body = Buffer.from(JSON.stringify(replaced.body));
    }
    const forwarded = { ...headers, host: new URL(this.provider.url).host, 'content-length': String(body.length) };
    const upstream = httpRequest(`${this.provider.url}${url}`, { method, headers: forwarded }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    upstream.end(body);
  }
}
