/** OpenAI Chat message builders for hand-written test histories. */

/** One entry of an assistant message's `tool_calls`. */
export const toolCall = (id: string, name = 'bash', args: Record<string, unknown> = { command: 'ls' }) => ({
  id,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});

/** An assistant message making one tool call. */
export const callMessage = (id: string, name = 'bash', args: Record<string, unknown> = { command: 'ls' }) => ({
  role: 'assistant',
  content: null,
  tool_calls: [toolCall(id, name, args)],
});

/** A tool message answering call `id`. */
export const toolResult = (id: string, content = 'out') => ({ role: 'tool', tool_call_id: id, content });
