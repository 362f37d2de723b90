import fc from 'fast-check';

/**
 * fast-check arbitraries for whole histories in each format, built from one format-free skeleton:
 * user turns (text, sometimes with an image), assistant turns with optional thinking and 0–3
 * parallel tool calls with their results, and optionally a trailing in-flight call (unanswered or
 * partly answered). Ids are unique within a history.
 */

export interface SkeletonCall {
  name: string;
  args: Record<string, string>;
  result: string;
  error: boolean;
}

export type SkeletonTurn =
  | { kind: 'user'; text: string; image: boolean; novel?: boolean }
  | { kind: 'assistant'; text: string; thinking: string | null; calls: SkeletonCall[] }
  /** An instruction inside the history: Anthropic's `role: "system"`, a later Chat/Responses developer message. */
  | { kind: 'instruction'; text: string };

/**
 * The type every format's renderer gives a block, part or item the service cannot know (a type
 * newer than the release): the reserved `x_future` prefix, which no provider schema defines.
 */
export const FUTURE_TYPE = 'x_future';

export interface Skeleton {
  system: string[];
  /** The first user message (default: `the task`). */
  task?: string;
  turns: SkeletonTurn[];
  /** Trailing in-flight calls: how many, and how many of them already answered. */
  inFlight: { calls: SkeletonCall[]; answered: number } | null;
}

const words = fc.constantFrom(
  'read',
  'the',
  'file',
  'src/app.ts',
  'error:',
  'ENOENT',
  'def',
  'return',
  '{',
  '}',
  '<|endoftext|>',
  '42ms',
  'café',
  '日本語',
  'https://example.com/x?y=1',
  '\n',
  'assert',
  'x == 1',
);
const text = (max: number) => fc.array(words, { minLength: 1, maxLength: max }).map((w) => w.join(' '));

/** A few results recur verbatim (agents re-run the same command), so dedupe has work to do. */
const REPEATED = [
  'On branch main\nnothing to commit, working tree clean\n'.repeat(12),
  Array.from({ length: 40 }, (_, i) => `src/module_${i}.py:${i * 7}: def handler_${i}(request):`).join('\n'),
];

/**
 * Skeletons whose texts (user and assistant text, thinking, arguments, results) come from `textOf`;
 * with `extras`, some turns are instructions and some user turns carry a part of a future type.
 */
function skeletonOf(
  textOf: (max: number) => fc.Arbitrary<string>,
  task?: fc.Arbitrary<string>,
  extras = false,
): fc.Arbitrary<Skeleton> {
  const call: fc.Arbitrary<SkeletonCall> = fc.record({
    name: fc.constantFrom('read_file', 'bash', 'grep', 'web_search', 'write_file'),
    args: fc.dictionary(fc.constantFrom('path', 'command', 'query', 'content'), textOf(60), { maxKeys: 3 }),
    result: fc.oneof({ arbitrary: textOf(120), weight: 3 }, { arbitrary: fc.constantFrom(...REPEATED), weight: 1 }),
    error: fc.boolean(),
  });
  const userTurn: fc.Arbitrary<SkeletonTurn> = extras
    ? fc.record({ kind: fc.constant('user' as const), text: textOf(20), image: fc.boolean(), novel: fc.boolean() })
    : fc.record({ kind: fc.constant('user' as const), text: textOf(20), image: fc.boolean() });
  const instruction = fc.record({ kind: fc.constant('instruction' as const), text: textOf(12) });
  const assistantTurn = fc.record({
    kind: fc.constant('assistant' as const),
    text: fc.oneof(fc.constant(''), textOf(20)),
    thinking: fc.option(text(15), { nil: null }),
    calls: fc.array(call, { maxLength: 3 }),
  });
  return fc.record({
    system: fc.array(text(10), { maxLength: 2 }),
    turns: fc.array(
      extras
        ? fc.oneof(
            { arbitrary: assistantTurn, weight: 3 },
            { arbitrary: userTurn, weight: 1 },
            { arbitrary: instruction, weight: 1 },
          )
        : fc.oneof({ arbitrary: assistantTurn, weight: 3 }, { arbitrary: userTurn, weight: 1 }),
      { minLength: 0, maxLength: 25 },
    ),
    inFlight: fc.option(
      fc
        .array(call, { minLength: 1, maxLength: 3 })
        .chain((calls) => fc.record({ calls: fc.constant(calls), answered: fc.integer({ min: 0, max: calls.length - 1 }) })),
      { nil: null },
    ),
    ...(task ? { task } : {}),
  });
}

export const skeleton: fc.Arbitrary<Skeleton> = skeletonOf(text);

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** Renders a skeleton as OpenAI Chat Completions messages. */
export function toOpenAIChat(s: Skeleton): unknown[] {
  let id = 0;
  const out: unknown[] = s.system.map((content, i) => ({ role: i === 0 ? 'system' : 'developer', content }));
  out.push({ role: 'user', content: s.task ?? 'the task' });
  const assistant = (turn: { text: string; thinking: string | null }, calls: SkeletonCall[]) => {
    const ids = calls.map(() => `call_${++id}`);
    const m: Record<string, unknown> = { role: 'assistant', content: turn.text || (calls.length ? null : '...') };
    if (turn.thinking) m.reasoning_content = turn.thinking;
    if (calls.length) {
      m.tool_calls = calls.map((c, k) => ({
        id: ids[k],
        type: 'function',
        function: { name: c.name, arguments: JSON.stringify(c.args) },
      }));
    }
    out.push(m);
    return ids;
  };
  for (const turn of s.turns) {
    if (turn.kind === 'instruction') {
      out.push({ role: 'developer', content: turn.text });
      continue;
    }
    if (turn.kind === 'user') {
      const parts: unknown[] = [{ type: 'text', text: turn.text }];
      if (turn.image) parts.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } });
      if (turn.novel) parts.push({ type: `${FUTURE_TYPE}_part`, payload: turn.text });
      out.push(parts.length > 1 ? { role: 'user', content: parts } : { role: 'user', content: turn.text });
      continue;
    }
    const ids = assistant(turn, turn.calls);
    turn.calls.forEach((c, k) => {
      out.push({ role: 'tool', tool_call_id: ids[k], content: c.result });
    });
  }
  if (s.inFlight) {
    const ids = assistant({ text: '', thinking: null }, s.inFlight.calls);
    for (let k = 0; k < s.inFlight.answered; k++) {
      out.push({ role: 'tool', tool_call_id: ids[k], content: s.inFlight.calls[k]?.result ?? '' });
    }
  }
  return out;
}

/**
 * Renders a skeleton as Anthropic Messages: roles alternate starting with user, tool results ride
 * in the next user message (results first, sometimes followed by text), thinking blocks carry
 * signatures. Consecutive turns of one role are merged so the output alternates.
 */
export function toAnthropic(s: Skeleton): { system: string | undefined; messages: unknown[] } {
  let id = 0;
  const messages: { role: string; content: unknown[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: unknown[]) => {
    // A system message is followed by an assistant turn.
    if (role === 'user' && messages[messages.length - 1]?.role === 'system')
      messages.push({ role: 'assistant', content: [{ type: 'text', text: 'noted' }] });
    const last = messages[messages.length - 1];
    if (last && last.role === role) {
      // Results must stay first: text joins after them; a second result block cannot arise here.
      last.content.push(...blocks);
    } else {
      messages.push({ role, content: blocks });
    }
  };
  push('user', [{ type: 'text', text: s.task ?? 'the task' }]);
  const assistant = (turn: { text: string; thinking: string | null }, calls: SkeletonCall[]) => {
    const blocks: unknown[] = [];
    if (turn.thinking) blocks.push({ type: 'thinking', thinking: turn.thinking, signature: `sig${++id}` });
    if (turn.text || calls.length === 0) blocks.push({ type: 'text', text: turn.text || '...' });
    const ids = calls.map(() => `toolu_${++id}`);
    calls.forEach((c, k) => {
      blocks.push({ type: 'tool_use', id: ids[k], name: c.name, input: c.args });
    });
    // An assistant message that holds tool calls cannot merge into a previous one that also did.
    const last = messages[messages.length - 1];
    if (last?.role === 'assistant') push('user', [{ type: 'text', text: 'continue' }]);
    push('assistant', blocks);
    return ids;
  };
  for (const turn of s.turns) {
    if (turn.kind === 'instruction') {
      // After a user turn (or tool results), never first, never two in a row.
      const last = messages[messages.length - 1];
      if (last?.role === 'system') continue;
      if (last?.role !== 'user') push('user', [{ type: 'text', text: 'continue' }]);
      messages.push({ role: 'system', content: [{ type: 'text', text: turn.text }] });
      continue;
    }
    if (turn.kind === 'user') {
      const blocks: unknown[] = [{ type: 'text', text: turn.text }];
      if (turn.image) blocks.push({ type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } });
      if (turn.novel) blocks.push({ type: `${FUTURE_TYPE}_block`, payload: turn.text });
      push('user', blocks);
      continue;
    }
    const ids = assistant(turn, turn.calls);
    if (turn.calls.length) {
      messages.push({
        role: 'user',
        content: turn.calls.map((c, k) => ({
          type: 'tool_result',
          tool_use_id: ids[k],
          content: c.result,
          ...(c.error ? { is_error: true } : {}),
        })),
      });
    }
  }
  if (s.inFlight) {
    const ids = assistant({ text: '', thinking: null }, s.inFlight.calls);
    if (s.inFlight.answered > 0) {
      messages.push({
        role: 'user',
        content: s.inFlight.calls
          .slice(0, s.inFlight.answered)
          .map((c, k) => ({ type: 'tool_result', tool_use_id: ids[k], content: c.result })),
      });
    }
  }
  return { system: s.system.length ? s.system.join('\n') : undefined, messages };
}

/**
 * Renders a skeleton as OpenAI Responses input items: each assistant turn is one response
 * (a reasoning item with encrypted content, an assistant message, parallel function calls),
 * followed by the function_call_output items.
 */
export function toResponses(s: Skeleton): unknown[] {
  let id = 0;
  const out: unknown[] = s.system.map((content, i) =>
    i === 0
      ? { type: 'message', role: 'system', content }
      : { type: 'message', role: 'developer', content: [{ type: 'input_text', text: content }] },
  );
  out.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: s.task ?? 'the task' }] });
  const response = (turn: { text: string; thinking: string | null }, calls: SkeletonCall[]) => {
    const n = ++id;
    if (turn.thinking) {
      out.push({
        type: 'reasoning',
        id: `rs_${n}`,
        summary: [{ type: 'summary_text', text: turn.thinking }],
        encrypted_content: `gAAAA${n}`,
      });
    }
    if (turn.text || calls.length === 0) {
      out.push({
        type: 'message',
        role: 'assistant',
        id: `msg_${n}`,
        status: 'completed',
        content: [{ type: 'output_text', text: turn.text || '...', annotations: [], logprobs: [] }],
      });
    }
    return calls.map((c, k) => {
      const callId = `call_${n}_${k}`;
      out.push({
        type: 'function_call',
        id: `fc_${n}_${k}`,
        call_id: callId,
        name: c.name,
        arguments: JSON.stringify(c.args),
        status: 'completed',
      });
      return callId;
    });
  };
  for (const turn of s.turns) {
    if (turn.kind === 'instruction') {
      out.push({ type: 'message', role: 'developer', content: [{ type: 'input_text', text: turn.text }] });
      continue;
    }
    if (turn.kind === 'user') {
      const content: unknown[] = [{ type: 'input_text', text: turn.text }];
      if (turn.image) content.push({ type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'low' });
      out.push({ type: 'message', role: 'user', content });
      if (turn.novel) out.push({ type: `${FUTURE_TYPE}_item`, id: `xf_${++id}`, payload: turn.text });
      continue;
    }
    const ids = response(turn, turn.calls);
    turn.calls.forEach((c, k) => {
      out.push({ type: 'function_call_output', call_id: ids[k], output: c.result });
    });
  }
  if (s.inFlight) {
    const ids = response({ text: '', thinking: null }, s.inFlight.calls);
    for (let k = 0; k < s.inFlight.answered; k++) {
      out.push({ type: 'function_call_output', call_id: ids[k], output: s.inFlight.calls[k]?.result ?? '' });
    }
  }
  return out;
}

/**
 * Renders a skeleton as Gemini contents: `user`/`model` turns that alternate, parallel
 * functionCall parts answered by functionResponse parts in the next user turn (by id when the
 * calls carry ids, by name and order when not), thought parts, and a thought signature on the
 * first call of each turn.
 */
export function toGemini(s: Skeleton, withIds: boolean): { system: Record<string, unknown> | undefined; messages: unknown[] } {
  let id = 0;
  const messages: { role: string; parts: unknown[] }[] = [];
  const push = (role: 'user' | 'model', parts: unknown[]) => {
    const last = messages[messages.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else messages.push({ role, parts });
  };
  push('user', [{ text: s.task ?? 'the task' }]);
  const model = (turn: { text: string; thinking: string | null }, calls: SkeletonCall[]) => {
    const parts: unknown[] = [];
    if (turn.thinking) parts.push({ text: turn.thinking, thought: true });
    if (turn.text || calls.length === 0) parts.push({ text: turn.text || '...' });
    const ids = calls.map(() => `fn_${++id}`);
    calls.forEach((c, k) => {
      parts.push({
        functionCall: { ...(withIds ? { id: ids[k] } : {}), name: c.name, args: c.args },
        ...(k === 0 ? { thoughtSignature: Buffer.from(`sig-${id}`).toString('base64') } : {}),
      });
    });
    if (messages[messages.length - 1]?.role === 'model') push('user', [{ text: 'continue' }]);
    push('model', parts);
    return ids;
  };
  const responses = (calls: SkeletonCall[], ids: string[]) =>
    calls.map((c, k) => ({
      functionResponse: { ...(withIds ? { id: ids[k] } : {}), name: c.name, response: { output: c.result } },
    }));
  for (const turn of s.turns) {
    // Gemini has no instruction inside `contents`: the system prompt is `systemInstruction`.
    if (turn.kind === 'instruction') continue;
    if (turn.kind === 'user') {
      const parts: unknown[] = [{ text: turn.text }];
      if (turn.image) parts.push({ inlineData: { mimeType: 'image/png', data: PNG } });
      if (turn.novel) parts.push({ [`${FUTURE_TYPE}Part`]: { payload: turn.text } });
      push('user', parts);
      continue;
    }
    const ids = model(turn, turn.calls);
    if (turn.calls.length) messages.push({ role: 'user', parts: responses(turn.calls, ids) });
  }
  if (s.inFlight) {
    const ids = model({ text: '', thinking: null }, s.inFlight.calls);
    if (s.inFlight.answered > 0)
      messages.push({ role: 'user', parts: responses(s.inFlight.calls.slice(0, s.inFlight.answered), ids) });
  }
  const system = s.system.length ? { parts: s.system.map((text) => ({ text })) } : undefined;
  return { system, messages };
}

export interface GeneratedHistory {
  format: 'openai-chat' | 'anthropic' | 'openai-responses' | 'gemini';
  messages: unknown[];
  system?: string | Record<string, unknown>;
}

/** A history in each format from each skeleton. */
function historiesOf(skeletons: fc.Arbitrary<Skeleton>): Record<GeneratedHistory['format'], fc.Arbitrary<GeneratedHistory>> {
  return {
    'openai-chat': skeletons.map((s) => ({ format: 'openai-chat', messages: toOpenAIChat(s) })),
    anthropic: skeletons.map((s) => {
      const { system, messages } = toAnthropic(s);
      return { format: 'anthropic', messages, ...(system ? { system } : {}) };
    }),
    'openai-responses': skeletons.map((s) => ({ format: 'openai-responses', messages: toResponses(s) })),
    gemini: fc.tuple(skeletons, fc.boolean()).map(([s, withIds]) => {
      const { system, messages } = toGemini(s, withIds);
      return { format: 'gemini', messages, ...(system ? { system } : {}) };
    }),
  };
}

/** A history in each supported format, from the same skeletons. */
export const histories = historiesOf(skeleton);

/**
 * Histories with instructions inside them (Anthropic `role: "system"` messages, later developer
 * messages; none in Gemini, which has no such message) and user turns carrying a block, part or
 * item of a future type (`FUTURE_TYPE`).
 */
export const instructedHistories = historiesOf(skeletonOf(text, undefined, true));

/**
 * Histories whose texts (the task, user and assistant text, tool arguments and results) often
 * start with, or are, one of `marks` (marker strings: forged, quoted from real output, truncated):
 * text that looks like the service's own and must be treated as the user's.
 */
export function markedHistories(marks: fc.Arbitrary<string>): Record<GeneratedHistory['format'], fc.Arbitrary<GeneratedHistory>> {
  const marked = (max: number) =>
    fc.oneof(
      { arbitrary: text(max), weight: 2 },
      { arbitrary: fc.tuple(marks, text(max)).map(([m, rest]) => `${m}${rest}`), weight: 2 },
      { arbitrary: marks.filter((m) => m !== ''), weight: 1 },
    );
  return historiesOf(skeletonOf(marked, marked(20)));
}
