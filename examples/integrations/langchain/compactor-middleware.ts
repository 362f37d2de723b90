/**
 * A LangChain v1 agent middleware that calls Compactor's `POST /v1/fit` before every model call
 * and, when fit reduced the history, replaces the agent's `state.messages` with what it returned.
 *
 * LangChain messages go to Compactor in the OpenAI Chat Completions wire format and come back
 * through LangChain's own converters: `convertMessagesToCompletionsMessageParams` (the one
 * `ChatOpenAI` uses to build its request) out, `coerceMessageLikeToMessage` back. Messages that
 * fit kept unchanged are not converted back at all: the original LangChain objects are reused, so
 * their ids, `usage_metadata` and `response_metadata` survive.
 */
import { isDeepStrictEqual } from 'node:util';
import type { CompactorClient, FitRequest, FitResponse } from '@compactor/client';
import { AIMessage, type BaseMessage, coerceMessageLikeToMessage, RemoveMessage } from '@langchain/core/messages';
import { REMOVE_ALL_MESSAGES } from '@langchain/langgraph';
import { convertMessagesToCompletionsMessageParams } from '@langchain/openai';
import { createMiddleware } from 'langchain';

/** One message in the OpenAI Chat Completions wire format (what ChatOpenAI sends). */
export type ChatMessage = ReturnType<typeof convertMessagesToCompletionsMessageParams>[number];

export interface CompactorMiddlewareOptions {
  compactor: CompactorClient;
  /** The model name fit prices and sizes the window by (e.g. `gpt-4o`). */
  model: string;
  /** Any other fit options: `target_fraction` or `target_tokens`, `context_window`, `policy`… */
  fit?: Omit<FitRequest<ChatMessage>, 'messages' | 'model' | 'format' | 'usage'>;
  /** Called after each fit call (logging, metrics, tests). */
  onFit?: (request: FitRequest<ChatMessage>, response: FitResponse<ChatMessage>) => void;
}

/** The wire form of LangChain messages, one wire message per LangChain message. */
function toWire(messages: BaseMessage[], model: string): ChatMessage[] | undefined {
  const wire = messages.map((message) => convertMessagesToCompletionsMessageParams({ messages: [message], model }));
  // The converter may expand one message into two (an assistant audio reference); then the
  // positions no longer line up, and the middleware leaves the history alone.
  if (wire.some((converted) => converted.length !== 1)) return undefined;
  return wire.flat();
}

/**
 * The provider's usage of the newest model call, as Compactor wants it: the raw OpenAI usage
 * object that `ChatOpenAI` keeps in `response_metadata.usage` (non-streaming calls), else one
 * rebuilt from LangChain's normalized `usage_metadata` (streaming calls), which keeps the cached
 * prompt tokens (`input_token_details.cache_read`) but not the rest of the provider's details.
 */
function providerUsage(message: AIMessage): Record<string, unknown> | undefined {
  const raw = message.response_metadata?.usage as Record<string, unknown> | undefined;
  if (raw && typeof raw.prompt_tokens === 'number') return raw;
  const usage = message.usage_metadata;
  if (!usage) return undefined;
  const cached = usage.input_token_details?.cache_read;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.total_tokens,
    ...(cached !== undefined ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
  };
}

export function compactorMiddleware(options: CompactorMiddlewareOptions) {
  const { compactor, model } = options;
  return createMiddleware({
    name: 'CompactorMiddleware',
    beforeModel: async (state) => {
      const history = state.messages;
      const wire = toWire(history, model);
      if (!wire || wire.length === 0) return undefined;

      // The newest reply carries the usage of the call that produced it; it covered every
      // message up to and including itself (the system prompt and tools are not in `messages`,
      // but the provider counted them, so the occupancy fit derives is the real one).
      const last = history.findLastIndex((message) => AIMessage.isInstance(message));
      const usage = last >= 0 ? providerUsage(history[last] as AIMessage) : undefined;
      const request: FitRequest<ChatMessage> = {
        ...options.fit,
        format: 'openai-chat',
        model,
        messages: wire,
        ...(usage ? { usage: { ...usage, messages_covered: last + 1 } } : {}),
      };
      const fitted = await compactor.fit<ChatMessage>(request);
      options.onFit?.(request, fitted);
      if (!fitted.applied) return undefined;

      // Kept messages come back as the same JSON values, in order: reuse the original objects.
      const kept = fitted.actions.filter((a) => a.action === 'keep').map((a) => a.index);
      const messages = fitted.messages.map((message) => {
        const index = kept[0];
        if (index !== undefined && isDeepStrictEqual(message, wire[index])) {
          kept.shift();
          return history[index] as BaseMessage;
        }
        return coerceMessageLikeToMessage(message as Parameters<typeof coerceMessageLikeToMessage>[0]);
      });
      return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...messages] };
    },
  });
}
