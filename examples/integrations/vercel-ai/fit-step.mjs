/**
 * A `prepareStep` for the AI SDK's `generateText` / `streamText` / `ToolLoopAgent` that calls
 * Compactor's `/v1/fit` before every step and returns the reduced history as the step's messages
 * (which the SDK then keeps as the base for the steps after it).
 */
import { toWire } from './convert.mjs';

/**
 * @param {{
 *   compactor: import('@compactor/client').CompactorClient,
 *   format: import('./convert.mjs').Format,
 *   model: string,
 *   system: string,
 *   tools?: unknown[],
 *   contextWindow?: number,
 *   fit?: Record<string, unknown>,
 *   onFit?: (answer: import('@compactor/client').FitResponse<any>) => void,
 * }} options `fit`: more fit options (`target_fraction`, `compact`, `policy`, …)
 * @returns {import('ai').PrepareStepFunction<any>}
 */
export function fitBeforeEachStep({ compactor, format, model, system, tools, contextWindow, fit = {}, onFit }) {
  let sent = 0; // wire messages of the previous step's prompt
  return async ({ messages, steps }) => {
    // openai-chat carries the system prompt as its first message; anthropic has it apart.
    const history =
      format === 'openai-chat' ? [{ role: /** @type {const} */ ('system'), content: system }, ...messages] : messages;
    const { wire, back } = toWire(history, format);
    // The provider's usage of the previous step, as it came (usage.raw), covering its prompt and its reply.
    const raw = steps.at(-1)?.usage.raw;
    const fitted = await compactor.fit({
      format,
      model,
      messages: wire,
      ...(format === 'anthropic' ? { system } : {}),
      ...(tools ? { tools } : {}),
      ...(contextWindow ? { context_window: contextWindow } : {}),
      ...(raw ? { usage: { ...raw, messages_covered: sent + 1 } } : {}),
      ...fit,
    });
    onFit?.(fitted);
    sent = fitted.messages.length;
    const reduced = back(fitted.messages);
    return { messages: format === 'openai-chat' ? reduced.filter((m) => m.role !== 'system') : reduced };
  };
}
