import { HISTORIES, type SampleHistory } from './histories.js';

/** One named example of a request body, as OpenAPI's Example Object has it. */
export interface Example {
  readonly summary: string;
  readonly description?: string;
  readonly value: Record<string, unknown>;
}

type Format = keyof typeof HISTORIES;

const FORMAT_TITLES: Record<Format, string> = {
  'openai-chat': 'OpenAI Chat Completions',
  anthropic: 'Anthropic Messages',
  'openai-responses': 'OpenAI Responses',
  gemini: 'Gemini',
};

/** A request's history fields from a sample history: messages, its model, system and reported usage. */
function history(h: SampleHistory, withUsage = true): Record<string, unknown> {
  return {
    model: h.model,
    ...(h.system ? { system: h.system } : {}),
    ...(withUsage ? { usage: h.usage } : {}),
    messages: h.messages,
  };
}

/** One example per wire format, each with the same options. */
function perFormat(
  say: (title: string) => string,
  options: Record<string, unknown>,
  description?: string,
  formats: readonly Format[] = ['openai-chat', 'anthropic', 'openai-responses', 'gemini'],
): Record<string, Example> {
  return Object.fromEntries(
    formats.map((format) => [
      format,
      {
        summary: say(FORMAT_TITLES[format]),
        ...(description ? { description } : {}),
        value: { ...options, ...history(HISTORIES[format]) },
      },
    ]),
  );
}

const SESSION =
  'A coding agent fixing a failing test: it read a file, ran the tests, searched, edited and ran them again (five tool exchanges, the first three with long results), answered, and the user asked for more.';

/**
 * Request examples of every POST endpoint but `/v1/expand`, by URL, the first the endpoint's most
 * common use: each answers 200 on a service with its defaults (no LLM configured: summaries are
 * extractive), and each strategy example reduces the history. `/v1/expand`'s example is a
 * compaction's recorded output (`openapi/examples.json`, written by `npm run openapi`).
 */
export const REQUEST_EXAMPLES: Readonly<Record<string, Record<string, Example>>> = {
  '/v1/window': perFormat(
    (title) => `${title}: keep the task and the newest 6 messages`,
    { keep: { messages: 6 } },
    `${SESSION} The window keeps the system prompt, the task and the newest 6 messages (moved back to a tool exchange's start) and drops the three oldest tool exchanges.`,
  ),
  '/v1/compact': perFormat(
    (title) => `${title}: offload old tool results`,
    { keep_tool_uses: 3, min_tokens: 100 },
    `${SESSION} The newest 3 tool results stay; the two older ones over 100 tokens (the file read and the failing test run) become placeholders naming the artifact that holds each original (\`POST /v1/expand\` restores them).`,
  ),
  '/v1/summarize': perFormat(
    (title) => `${title}: summarize all but the newest 6 messages`,
    { keep: { messages: 6 } },
    `${SESSION} The range between the task and the newest 6 messages becomes one summary; with no LLM configured the extractive summarizer writes it (\`summary.summarizer: extractive\`).`,
    ['openai-chat', 'anthropic'],
  ),
  '/v1/fit': {
    ...perFormat(
      (title) => `${title}: over its limit, get under the target`,
      { target_tokens: 800, limit: { tokens: 1000 } },
      `${SESSION} The history is over the agent's 1,000-token limit, so a reduction is forced down to the 800-token target (\`cost.decision: forced\`): compacting the old tool results is enough, the summarize and window stages do not run. Between the target and the limit, fit reduces only where that lowers the bill with the prompt cache in view.`,
      ['openai-chat', 'anthropic'],
    ),
    prepare: {
      summary: 'OpenAI Chat Completions: under its target, prepare the next summary in the background',
      description: `${SESSION} Under the target nothing changes, but occupancy has passed \`prepare.at\` (here 10% of the target), so the summary a later call will need starts being made off the request path (\`prepared\`, state \`started\`): \`GET /v1/prepared/{id}\` follows it, and the call that needs it splices it in without waiting for a summarizer. On by default when an LLM summarizer is configured; this service answers with its extractive one when none is.`,
      value: {
        target_tokens: 8000,
        policy: 'tokens',
        summarize: { keep: { messages: 4 } },
        prepare: { enabled: true, at: { fraction: 0.1 } },
        ...history(HISTORIES['openai-chat']),
      },
    },
  },
  '/v1/tokens': perFormat(
    (title) => `${title}: count a history`,
    {},
    `${SESSION} Counted with the model's tokenizer (exact for OpenAI models, estimated for the others); with \`usage\`, occupancy is the reported total plus what follows it.`,
    ['openai-chat', 'gemini'],
  ),
  '/v1/validate': perFormat(
    (title) => `${title}: check a history`,
    {},
    `${SESSION} Every tool call has its result and the format's rules hold: \`valid: true\`.`,
    ['openai-chat', 'openai-responses'],
  ),
};
