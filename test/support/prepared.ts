import type { FastifyInstance } from 'fastify';

/** What the prepared-summary tests send: conversations, fit bodies, and polling `GET /v1/prepared/{id}`. */

/**
 * A plain conversation (no tool calls: compaction leaves it alone), `turns` user/assistant pairs of
 * ~120 tokens each. `terse`: the user types one short line and the assistant writes the rest, as in
 * an agent's session (a summary keeps every user-typed message verbatim, so a conversation made of
 * long user messages can hardly be summarized at all).
 */
export function conversation(turns: number, from = 0, terse = false): { role: string; content: string }[] {
  const out: { role: string; content: string }[] = [];
  for (let i = from; i < from + turns; i++) {
    out.push({
      role: 'user',
      content: terse
        ? `Step ${i}: explain module_${i}.py.`
        : `Step ${i}: please look at module_${i}.py and explain what ${'it does and why '.repeat(12)}`,
    });
    out.push({
      role: 'assistant',
      content: `Module ${i} parses the configuration for service_${i}; ${'it reads a file and checks it. '.repeat(terse ? 14 : 12)}`,
    });
  }
  return out;
}

export const SYSTEM = { role: 'system', content: 'You are a coding agent.' };

/** Fit under policy tokens at a target, preparing from `at` tokens. */
export const fitBody = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
  messages,
  format: 'openai-chat',
  model: 'gpt-4o',
  target_tokens: 3000,
  policy: 'tokens',
  summarize: { keep: { messages: 6 } },
  prepare: { enabled: true, at: { tokens: 1500 } },
  ...extra,
});

export async function fit(app: FastifyInstance, body: unknown, key?: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/fit',
    payload: body as Record<string, unknown>,
    ...(key ? { headers: { authorization: `Bearer ${key}` } } : {}),
  });
  return { status: res.statusCode, json: res.json() };
}

/** Polls `GET /v1/prepared/{id}` until it is ready or failed (a generous deadline: the job is a local HTTP call). */
export async function settled(app: FastifyInstance, id: string, key?: string) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await app.inject({
      method: 'GET',
      url: `/v1/prepared/${id}`,
      ...(key ? { headers: { authorization: `Bearer ${key}` } } : {}),
    });
    const view = res.json();
    if (view.state === 'ready' || view.state === 'failed' || Date.now() > deadline) return view;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
