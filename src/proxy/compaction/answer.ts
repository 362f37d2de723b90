import type { RecognizedCompaction } from './recognize.js';
import { type SealClaims, textDigest } from './seal.js';
import { claudeCodeSummaryText, codexSummaryText, type PreparedCompaction } from './summary-text.js';

/**
 * The provider answer to an agent's own compaction request, built from a prepared summary, in the
 * form each agent expects and streamed or not as it asked: Claude Code gets an Anthropic message,
 * Codex's local compaction an ordinary Responses assistant message, Codex's `compaction_trigger`
 * exactly one `compaction` output item whose `encrypted_content` is Compactor's sealed token.
 * Usage is zero: nothing was billed upstream (Compactor's own summarizer usage belongs in a
 * response header, set by the caller). Pure: the same inputs give the same bytes.
 */

/** A complete answer: what to send with status 200. */
export interface CompactionAnswer {
  contentType: 'text/event-stream' | 'application/json';
  body: string;
  /** The summary text the answer holds (for the trigger form: what its sealed item stands for). */
  text: string;
  /** The trigger form: the claims its token seals (the caller keeps `text` under them for `replaceSealed`). */
  sealed?: SealClaims;
}

/** What the answer needs beyond the summary. */
export interface AnswerContext {
  /** The model the request named (echoed as the provider would). */
  model: string;
  /** Seals a token's claims (seal.ts `sealer(secret, tenant).seal`). */
  seal: (claims: SealClaims) => string;
}

type Obj = Record<string, unknown>;

function sse(type: string, data: Obj): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

const ANTHROPIC_ZERO_USAGE = { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 };

/** An Anthropic Messages answer holding one text block: JSON, or `message_start` … `message_stop`. */
export function anthropicAnswer(text: string, model: string, stream: boolean): Pick<CompactionAnswer, 'contentType' | 'body'> {
  const id = `msg_cmp_${textDigest(text).slice(0, 24)}`;
  const message = { id, type: 'message', role: 'assistant', model, content: [] as Obj[], stop_reason: null, stop_sequence: null };
  if (!stream) {
    const whole = { ...message, content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: ANTHROPIC_ZERO_USAGE };
    return { contentType: 'application/json', body: JSON.stringify(whole) };
  }
  const body = [
    sse('message_start', { message: { ...message, usage: ANTHROPIC_ZERO_USAGE } }),
    sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
    sse('content_block_stop', { index: 0 }),
    sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 0 } }),
    sse('message_stop', {}),
  ].join('');
  return { contentType: 'text/event-stream', body };
}

const RESPONSES_ZERO_USAGE = {
  input_tokens: 0,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 0,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 0,
};

function responseObject(id: string, model: string, status: string, output: Obj[]): Obj {
  return {
    id,
    object: 'response',
    created_at: 0,
    status,
    model,
    output,
    usage: status === 'completed' ? RESPONSES_ZERO_USAGE : null,
  };
}

/** The events of one output item between `response.created` and `response.completed`. */
function itemEvents(item: Obj, next: () => number): string[] {
  if (item.type !== 'message') {
    return [
      sse('response.output_item.added', { sequence_number: next(), output_index: 0, item }),
      sse('response.output_item.done', { sequence_number: next(), output_index: 0, item }),
    ];
  }
  const text = String(((item.content as Obj[])[0] as Obj).text);
  const part = { type: 'output_text', text: '', annotations: [] };
  const at = { item_id: item.id, output_index: 0, content_index: 0 };
  return [
    sse('response.output_item.added', {
      sequence_number: next(),
      output_index: 0,
      item: { ...item, status: 'in_progress', content: [] },
    }),
    sse('response.content_part.added', { sequence_number: next(), ...at, part }),
    sse('response.output_text.delta', { sequence_number: next(), ...at, delta: text, logprobs: [] }),
    sse('response.output_text.done', { sequence_number: next(), ...at, text, logprobs: [] }),
    sse('response.content_part.done', { sequence_number: next(), ...at, part: { ...part, text } }),
    sse('response.output_item.done', { sequence_number: next(), output_index: 0, item }),
  ];
}

/** A Responses answer with one output item: JSON, or `response.created` … `response.completed`. */
export function responsesAnswer(
  item: Obj,
  model: string,
  stream: boolean,
  key: string,
): Pick<CompactionAnswer, 'contentType' | 'body'> {
  const id = `resp_cmp_${key.slice(0, 24)}`;
  if (!stream) return { contentType: 'application/json', body: JSON.stringify(responseObject(id, model, 'completed', [item])) };
  let seq = 0;
  const next = () => seq++;
  const body = [
    sse('response.created', { sequence_number: next(), response: responseObject(id, model, 'in_progress', []) }),
    sse('response.in_progress', { sequence_number: next(), response: responseObject(id, model, 'in_progress', []) }),
    ...itemEvents(item, next),
    sse('response.completed', { sequence_number: next(), response: responseObject(id, model, 'completed', [item]) }),
  ].join('');
  return { contentType: 'text/event-stream', body };
}

/** A Responses assistant message holding `text`. */
export function assistantMessageItem(text: string): Obj {
  return {
    id: `msg_cmp_${textDigest(text).slice(0, 24)}`,
    type: 'message',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}

/** The one `compaction` item Codex requires, its `encrypted_content` Compactor's sealed token. */
export function compactionItem(token: string, digest: string): Obj {
  return { id: `cmp_${digest.slice(0, 24)}`, type: 'compaction', encrypted_content: token };
}

/**
 * The answer to a recognised compaction request from a prepared summary, or undefined for a form
 * that is not answered (Codex's older `/responses/compact`: 0.171.0 no longer calls it, and what
 * its callers expect back was not captured): the caller passes those through.
 */
export function compactionAnswer(
  recognized: RecognizedCompaction,
  prepared: PreparedCompaction,
  context: AnswerContext,
): CompactionAnswer | undefined {
  const { model } = context;
  if (recognized.agent === 'claude-code') {
    const text = claudeCodeSummaryText(prepared);
    return { ...anthropicAnswer(text, model, recognized.stream), text };
  }
  const text = codexSummaryText(prepared);
  const digest = textDigest(text);
  if (recognized.form === 'local')
    return { ...responsesAnswer(assistantMessageItem(text), model, recognized.stream, digest), text };
  if (recognized.form !== 'trigger') return undefined;
  const sealed: SealClaims = { id: prepared.artifactId, digest };
  const item = compactionItem(context.seal(sealed), digest);
  return { ...responsesAnswer(item, model, recognized.stream, digest), text, sealed };
}
