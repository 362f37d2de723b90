import OpenAI from 'openai';
import { CompactorError, type ErrorCode, fieldError } from '../errors.js';
import { Limiter } from './limiter.js';
import { pack, reportedTokens, retryAfter } from './llm-support.js';
import { chunkPrompt, mergePrompt, SYSTEM_PROMPT, summaryPrompt } from './prompts.js';
import { renderEntry } from './transcript.js';
import {
  addUsage,
  NO_SUMMARY_USAGE,
  type Summarizer,
  SummarizerFailure,
  type SummaryPlan,
  type SummaryRequest,
  type SummaryResult,
  type SummaryUsage,
  type TranscriptEntry,
} from './types.js';

export interface LlmSummarizerOptions {
  baseURL: string;
  apiKey: string | undefined;
  defaultModel: string;
  /** Models a request may ask for (the default is always allowed). */
  allowedModels: readonly string[];
  /** One call's deadline, in ms (the SDK's 10-minute default is wrong for a sidecar). */
  timeoutMs: number;
  /** Retries after a retryable failure (429, 5xx, timeout, connection); never the SDK's own. */
  maxRetries: number;
  /** Calls in flight at once, across all requests (and threads, with `sharedSlots`). */
  concurrency: number;
  /** The integer that threads share to count calls in flight (`Limiter.shared()`); private when omitted. */
  sharedSlots?: Int32Array | undefined;
  /** Longest wait honoured from a `retry-after` header, in ms. */
  maxRetryAfterMs?: number;
  countTokens: (text: string) => number;
}

/** Usage of every answer received for one summary, failed ones included. */
interface Ledger {
  usage: SummaryUsage;
}

interface Failure {
  error: CompactorError;
  retryable: boolean;
  retryAfterMs: number | undefined;
}

/**
 * An answer longer than this many characters per token of `max_tokens` (a summary averages about 4)
 * ignored `max_tokens`: it is refused unread (not retried) rather than counted, which for megabytes
 * kept a thread busy for seconds.
 */
const MAX_CHARS_PER_TOKEN = 32;

/** The one place where the SDK's errors become ours (docs/architecture.md, rule 6). */
export function translate(error: unknown): Failure {
  const fail = (code: ErrorCode, detail: string, retryable: boolean, after?: number): Failure => ({
    error: new CompactorError(code, detail),
    retryable,
    retryAfterMs: after,
  });
  if (error instanceof CompactorError)
    return { error, retryable: error.code === 'CMP_ERR_SUMMARIZER_EMPTY', retryAfterMs: undefined };
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return fail('CMP_ERR_SUMMARIZER_TIMEOUT', 'the summarizer did not answer in time', true);
  if (error instanceof OpenAI.APIUserAbortError)
    return fail('CMP_ERR_SUMMARIZER_TIMEOUT', 'the request deadline passed while summarizing', false);
  if (error instanceof OpenAI.APIConnectionError)
    return fail('CMP_ERR_SUMMARIZER_UNAVAILABLE', 'the summarizer cannot be reached', true);
  if (error instanceof OpenAI.RateLimitError) {
    return fail('CMP_ERR_SUMMARIZER_UNAVAILABLE', 'the summarizer is rate limiting (429)', true, retryAfter(error.headers));
  }
  if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
    const retryable = error.status >= 500 || error.status === 408 || error.status === 409;
    return fail('CMP_ERR_SUMMARIZER_UPSTREAM', `the summarizer answered ${error.status}`, retryable, retryAfter(error.headers));
  }
  // Malformed JSON bodies and other SDK failures.
  return fail('CMP_ERR_SUMMARIZER_UPSTREAM', 'the summarizer sent an answer that could not be read', true);
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(new OpenAI.APIUserAbortError());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * The LLM summarizer: the openai SDK (the only module that imports it) pointed at any
 * OpenAI-compatible server. Explicit timeout, bounded retries with exponential backoff that honour
 * `retry-after` (capped), a concurrency limit, usage read from every answer. A range longer than
 * the input budget is summarized in chunks concurrently, then merged (in rounds, so no call's input
 * ever exceeds the budget).
 */
export class LlmSummarizer implements Summarizer {
  readonly kind = 'llm' as const;
  private readonly client: OpenAI;
  private readonly limiter: Limiter;

  constructor(private readonly options: LlmSummarizerOptions) {
    this.client = new OpenAI({
      baseURL: options.baseURL,
      apiKey: options.apiKey ?? 'not-needed',
      timeout: options.timeoutMs,
      maxRetries: 0,
    });
    this.limiter = new Limiter(options.concurrency, options.sharedSlots);
  }

  /** The model a request gets: its own if allowed, else the default; 400 when not allowed. */
  model(requested: string | undefined): string {
    if (!requested || requested === this.options.defaultModel) return this.options.defaultModel;
    if (this.options.allowedModels.includes(requested)) return requested;
    throw fieldError(
      'CMP_ERR_SUMMARIZER_MODEL_NOT_ALLOWED',
      'summarizer.model',
      `${JSON.stringify(requested)} is not allowed: it is neither the default model nor in COMPACTOR_SUMMARIZER_MODELS`,
    );
  }

  private async call(model: string, prompt: string, request: SummaryRequest, ledger: Ledger): Promise<SummaryResult> {
    let attempt = 0;
    for (;;) {
      // The SDK's timeout ends at the headers; this one covers a body trickled after them too.
      const timeout = AbortSignal.timeout(this.options.timeoutMs);
      const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
      try {
        const res = await this.limiter.run(() =>
          this.client.chat.completions.create(
            {
              model,
              messages: [
                { role: 'system', content: SYSTEM_PROMPT },
                { role: 'user', content: prompt },
              ],
              max_tokens: request.maxTokens,
              ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
            },
            // A signal of its own per call: concurrent chunk calls do not pile listeners on the request's.
            { signal },
          ),
        );
        const text = res.choices?.[0]?.message?.content ?? '';
        const usage: SummaryUsage = {
          input_tokens: reportedTokens(res.usage?.prompt_tokens),
          output_tokens: reportedTokens(res.usage?.completion_tokens),
          cached_input_tokens: reportedTokens(res.usage?.prompt_tokens_details?.cached_tokens),
          calls: 1,
        };
        ledger.usage = addUsage(ledger.usage, usage);
        if (text.length > request.maxTokens * MAX_CHARS_PER_TOKEN + 1024) {
          throw new CompactorError(
            'CMP_ERR_SUMMARIZER_UPSTREAM',
            `the summarizer's answer (${text.length} characters) is far longer than max_tokens (${request.maxTokens}) allows`,
          );
        }
        if (text.trim() === '') throw new CompactorError('CMP_ERR_SUMMARIZER_EMPTY', 'the summarizer returned an empty summary');
        return { text: text.trim(), usage, model: typeof res.model === 'string' && res.model !== '' ? res.model : model };
      } catch (error) {
        const failure =
          timeout.aborted && !request.signal?.aborted
            ? translate(new OpenAI.APIConnectionTimeoutError({ message: 'the answer did not arrive whole in time' }))
            : translate(error);
        if (!failure.retryable || attempt >= this.options.maxRetries || request.signal?.aborted) throw failure.error;
        const backoff = Math.min(250 * 2 ** attempt, 4000) * (0.5 + Math.random() / 2);
        const wait = Math.min(failure.retryAfterMs ?? backoff, this.options.maxRetryAfterMs ?? 10_000);
        attempt++;
        await sleep(wait, request.signal);
      }
    }
  }

  /** Splits the entries so that each chunk's prompt stays within the input budget. */
  private chunks(request: SummaryRequest, overhead: number): TranscriptEntry[][] {
    return this.sized(request, overhead).chunks;
  }

  /**
   * The chunks, and each one's transcript size: the sum of its entries' counts (each entry is
   * counted once; a chunk's text is those entries joined by newlines, within a token or so of
   * the sum) plus the transcript's tags.
   */
  private sized(request: SummaryRequest, overhead: number): { chunks: TranscriptEntry[][]; sizes: number[] } {
    const budget = (request.maxInputTokens ?? Number.POSITIVE_INFINITY) - overhead;
    const cost = new Map<TranscriptEntry, number>();
    const chunks = pack(
      request.entries,
      (e) => {
        const n = this.options.countTokens(renderEntry(e)) + 1;
        cost.set(e, n);
        return n;
      },
      budget,
    );
    const tags = this.options.countTokens(this.render([]));
    const sizes = chunks.map((c) => c.reduce((n, e) => n + (cost.get(e) ?? 0), tags));
    return { chunks, sizes };
  }

  private render(entries: readonly TranscriptEntry[]): string {
    return `<transcript>\n${entries.map(renderEntry).join('\n')}\n</transcript>`;
  }

  private overhead(request: SummaryRequest): number {
    const previous = request.previous ? this.options.countTokens(request.previous) : 0;
    return this.options.countTokens(SYSTEM_PROMPT + summaryPrompt('', null, request.instructions)) + previous + 64;
  }

  plan(request: SummaryRequest): SummaryPlan {
    const model = this.model(request.model);
    const overhead = this.overhead(request);
    const { chunks, sizes } = this.sized(request, overhead);
    if (chunks.length === 1) return { calls: [{ purpose: 'summary', input_tokens: (sizes[0] ?? 0) + overhead }], model };
    return {
      calls: [
        ...sizes.map((size) => ({ purpose: 'chunk' as const, input_tokens: size + overhead })),
        { purpose: 'merge', input_tokens: overhead + chunks.length * request.maxTokens },
      ],
      model,
    };
  }

  /**
   * Summarizes the range. On failure, rejects with a `SummarizerFailure` whose `billed` holds the
   * usage of every answer received before the failure (a failed summary is still paid for).
   */
  async summarize(request: SummaryRequest): Promise<SummaryResult> {
    const ledger: Ledger = { usage: NO_SUMMARY_USAGE };
    try {
      const result = await this.run(request, ledger);
      return { ...result, usage: ledger.usage };
    } catch (error) {
      throw new SummarizerFailure(error instanceof CompactorError ? error : translate(error).error, ledger.usage);
    }
  }

  private async run(request: SummaryRequest, ledger: Ledger): Promise<SummaryResult> {
    const model = this.model(request.model);
    const overhead = this.overhead(request);
    const chunks = this.chunks(request, overhead);
    if (chunks.length === 1) {
      return this.call(
        model,
        summaryPrompt(this.render(chunks[0] ?? []), request.previous, request.instructions),
        request,
        ledger,
      );
    }
    const parts = await Promise.all(
      chunks.map((chunk, i) => this.call(model, chunkPrompt(this.render(chunk), i + 1, chunks.length), request, ledger)),
    );
    let usage = parts.reduce((sum, p) => addUsage(sum, p.usage), NO_SUMMARY_USAGE);
    let partials = parts.map((p) => p.text);
    // Merge in rounds: each merge call takes as many partials as fit in the input budget.
    const budget = (request.maxInputTokens ?? Number.POSITIVE_INFINITY) - overhead;
    for (;;) {
      const batches = pack(partials, (p) => this.options.countTokens(p) + 16, budget);
      const last = batches.length === 1;
      const merged = await Promise.all(
        batches.map((b) =>
          this.call(model, mergePrompt(b, last ? request.previous : null, request.instructions), request, ledger),
        ),
      );
      usage = merged.reduce((sum, m) => addUsage(sum, m.usage), usage);
      partials = merged.map((m) => m.text);
      if (last) return { text: partials[0] ?? '', usage, model: merged[0]?.model ?? model };
    }
  }
}
