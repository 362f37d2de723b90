/**
 * Compactor for the OpenAI Agents SDK (JS): a `callModelInputFilter` that sends the input the
 * runner is about to give the model to Compactor's `POST /v1/fit` (format `openai-responses`) and
 * gives the model the history Compactor returns, instructions unchanged.
 *
 * Two things the hook alone does not give, and how this file gets them:
 * - The runner calls the filter with its own full history every turn (what the filter returned is
 *   not kept), so the filter keeps the history it returned and appends only what the runner added
 *   since: the model keeps seeing the prefix it cached, and Compactor prices against that cache.
 * - The filter is not given the last response's usage. It reads it from the run's `RunContext`
 *   (`usage.requestUsageEntries`, one entry per model call, with `input_tokens_details`): pass the
 *   same `RunContext` to `run(agent, input, { context })` and to this filter.
 */

import type { CompactorClient, FitRequest, FitResponse } from '@compactor/client';
import type { AgentInputItem, CallModelInputFilter, RunContext } from '@openai/agents';

/** A Responses API input item, as Compactor reads it (`openai-responses`). */
export type WireItem = Record<string, unknown>;

export interface CompactorFilterOptions {
  compactor: CompactorClient;
  /** The agent's model: selects the tokenizer, context window and prices. */
  model: string;
  /** The run's context: where the filter reads the last call's usage. Without it, no usage is sent. */
  runContext?: RunContext<unknown> | undefined;
  /** Fit options (`target_fraction` or `target_tokens` is required; `context_window`, `policy`, …). */
  fit: Omit<FitRequest<WireItem>, 'messages' | 'format' | 'model' | 'usage' | 'system'>;
  /**
   * When fit fails (service down, 4xx): called with the error, and the model gets the history
   * unchanged (fail open). Without it, the error is thrown and the run stops.
   */
  onError?: (error: unknown) => void;
  /** Called with each fit request and answer (logging, metrics, tests). */
  onFit?: (request: FitRequest<WireItem>, response: FitResponse<WireItem>) => void;
}

type Item = AgentInputItem & Record<string, unknown>;
type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const providerData = (item: Json): Json => (isRecord(item.providerData) ? item.providerData : {});

/** The text of a function result's output, as the Responses API takes it. */
function outputToWire(output: unknown): unknown {
  if (typeof output === 'string') return output;
  if (isRecord(output) && output.type === 'text' && typeof output.text === 'string') return output.text;
  if (Array.isArray(output)) {
    return output.map((part) =>
      isRecord(part) && part.type === 'text' && typeof part.text === 'string' ? { type: 'input_text', text: part.text } : part,
    );
  }
  return JSON.stringify(output);
}

/**
 * SDK item → Responses input item: the fields Compactor reads (call ids, outputs, reasoning
 * summaries and encrypted content). Other item types go through as they are (kept verbatim).
 */
export function toWire(item: Item): WireItem {
  const pd = providerData(item);
  switch (item.type) {
    case 'function_call':
      return { type: 'function_call', call_id: item.callId, name: item.name, arguments: item.arguments };
    case 'function_call_result':
      return { type: 'function_call_output', call_id: item.callId, output: outputToWire(item.output) };
    case 'reasoning': {
      const encrypted = pd.encryptedContent ?? pd.encrypted_content;
      const content = Array.isArray(item.content) ? item.content : [];
      return {
        type: 'reasoning',
        ...(typeof item.id === 'string' ? { id: item.id } : {}),
        summary: content.map((part) => ({ type: 'summary_text', text: isRecord(part) ? part.text : '' })),
        ...(typeof encrypted === 'string' ? { encrypted_content: encrypted } : {}),
      };
    }
    case undefined:
    case 'message': {
      const content = Array.isArray(item.content)
        ? item.content.map((part: unknown) => (isRecord(part) ? { type: part.type, text: part.text ?? part.refusal } : part))
        : item.content;
      return { type: 'message', role: item.role, content };
    }
    default:
      return item;
  }
}

/** Compactor's answer, back in the SDK's items: unchanged items are the originals, changed ones patched. */
function fromWire(reduced: WireItem[], originals: Item[], sent: WireItem[]): Item[] {
  const byJson = new Map<string, Item[]>();
  const byCallId = new Map<string, Item>();
  sent.forEach((wire, i) => {
    const original = originals[i] as Item;
    const key = JSON.stringify(wire);
    byJson.set(key, [...(byJson.get(key) ?? []), original]);
    if (typeof original.callId === 'string') byCallId.set(`${original.type}:${original.callId}`, original);
  });
  const names = new Map<string, unknown>();
  for (const wire of reduced)
    if (wire.type === 'function_call' && typeof wire.call_id === 'string') names.set(wire.call_id, wire.name);
  return reduced.map((wire) => {
    const same = byJson.get(JSON.stringify(wire))?.shift();
    if (same) return same;
    const callId = typeof wire.call_id === 'string' ? wire.call_id : undefined;
    if (wire.type === 'function_call_output' && callId) {
      const original = byCallId.get(`function_call_result:${callId}`);
      const output = typeof wire.output === 'string' ? { type: 'text', text: wire.output } : wire.output;
      if (original) return { ...original, output } as Item;
      // A call Compactor wrote itself (a summary is one function call and its output).
      const name = names.get(callId) ?? 'compactor_summary';
      return { type: 'function_call_result', callId, name, status: 'completed', output } as Item;
    }
    if (wire.type === 'function_call' && callId) {
      const original = byCallId.get(`function_call:${callId}`);
      if (original) return { ...original, arguments: wire.arguments } as Item;
      return { type: 'function_call', callId, name: wire.name, arguments: wire.arguments, status: 'completed' } as Item;
    }
    if (wire.type === 'message' && (wire.role === 'assistant' || wire.role === 'user' || wire.role === 'system')) {
      // A summary (or a rewritten message): plain text content is what every role takes.
      const text = typeof wire.content === 'string' ? wire.content : JSON.stringify(wire.content);
      if (wire.role === 'assistant') {
        const parts = Array.isArray(wire.content) ? wire.content : [{ type: 'output_text', text }];
        return { type: 'message', role: 'assistant', status: 'completed', content: parts } as Item;
      }
      return { type: 'message', role: wire.role, content: Array.isArray(wire.content) ? wire.content : text } as Item;
    }
    return wire as Item;
  });
}

/** The usage of the run's last model call, as the Responses API reported it, or undefined. */
function lastUsage(runContext: RunContext<unknown> | undefined): { usage: Json; calls: number } | undefined {
  const entries = runContext?.usage.requestUsageEntries;
  const last = entries?.at(-1);
  if (!entries || !last) return undefined;
  return {
    calls: entries.length,
    usage: {
      input_tokens: last.inputTokens,
      output_tokens: last.outputTokens,
      total_tokens: last.totalTokens,
      input_tokens_details: { ...last.inputTokensDetails },
      output_tokens_details: { ...last.outputTokensDetails },
    },
  };
}

const sameItems = (a: readonly unknown[], b: readonly unknown[]): boolean =>
  a.length === b.length && a.every((x, i) => JSON.stringify(x) === JSON.stringify(b[i]));

/**
 * A `callModelInputFilter` for `run(agent, input, { callModelInputFilter, context })` or
 * `new Runner({ callModelInputFilter })`. One per run: it keeps that run's reduced history.
 */
export function compactorInputFilter(options: CompactorFilterOptions): CallModelInputFilter {
  /** What the runner had given at the last call, what the model got instead, and its usage count. */
  let last: { given: Item[]; sent: Item[]; calls: number } | undefined;
  return async ({ modelData }) => {
    const given = modelData.input as Item[];
    // The runner appends to its history: ours is what we sent last plus what it has added since.
    const continues =
      last !== undefined && given.length >= last.given.length && sameItems(last.given, given.slice(0, last.given.length));
    const appended = continues && last ? given.slice(last.given.length) : given;
    const history = continues && last ? [...last.sent, ...appended] : given;
    const wire = history.map(toWire);

    const request: FitRequest<WireItem> = { ...options.fit, messages: wire, format: 'openai-responses', model: options.model };
    if (modelData.instructions) request.system = modelData.instructions;
    const reported = lastUsage(options.runContext);
    if (continues && last && reported && reported.calls > last.calls) {
      // The usage covers the prompt we sent plus the reply: the items the model added before any tool result.
      const reply = appended.findIndex((item) => item.type === 'function_call_result');
      const replyItems = reply === -1 ? appended.length : reply;
      request.usage = { ...reported.usage, messages_covered: last.sent.length + replyItems };
    }
    let response: FitResponse<WireItem> | undefined;
    try {
      response = await options.compactor.fit<WireItem>(request);
    } catch (error) {
      if (!options.onError) throw error;
      options.onError(error);
    }
    if (response) options.onFit?.(request, response);

    const sent = response?.applied ? fromWire(response.messages, history, wire) : history;
    last = { given, sent, calls: reported?.calls ?? 0 };
    // The instructions go to the model unchanged (Compactor counts them, never edits them).
    return modelData.instructions === undefined ? { input: sent } : { input: sent, instructions: modelData.instructions };
  };
}
