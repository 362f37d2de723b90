/**
 * The AI SDK's `ModelMessage` to and from a provider wire format Compactor reads (`openai-chat`,
 * `anthropic`), and back.
 *
 * The way back is lossless for what fit kept: fit returns every kept message as the same JSON value
 * it was sent, so each wire message is looked up by its JSON and the `ModelMessage`s it came from
 * are restored as they were (provider options, tool names, typed tool outputs included). Only what
 * fit changed (placeholders, a summary, thinking removed) is converted back from the wire, and
 * that loses what the wire format cannot carry (see the README).
 */

/** @typedef {import('ai').ModelMessage} ModelMessage */
/** @typedef {'openai-chat' | 'anthropic'} Format */

const textOf = (/** @type {any} */ output) =>
  output.type === 'text' || output.type === 'error-text'
    ? output.value
    : output.type === 'execution-denied'
      ? `Execution denied${output.reason ? `: ${output.reason}` : ''}`
      : JSON.stringify(output.value);

/** @param {ModelMessage[]} messages @returns {any[]} [origin, wire] pairs (one wire message per tool result) */
function toOpenAIChat(messages) {
  /** @type {any[]} */
  const out = [];
  for (const m of messages) {
    if (m.role === 'system') out.push([[m], { role: 'system', content: m.content }]);
    else if (m.role === 'user') {
      const content =
        typeof m.content === 'string'
          ? m.content
          : m.content.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : p));
      out.push([[m], { role: 'user', content }]);
    } else if (m.role === 'assistant') {
      const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
      const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
      const calls = parts.flatMap((p) =>
        p.type === 'tool-call'
          ? [{ id: p.toolCallId, type: 'function', function: { name: p.toolName, arguments: JSON.stringify(p.input) } }]
          : [],
      );
      out.push([[m], { role: 'assistant', content: text || null, ...(calls.length ? { tool_calls: calls } : {}) }]);
    } else {
      for (const p of m.content)
        if (p.type === 'tool-result') out.push([[m], { role: 'tool', tool_call_id: p.toolCallId, content: textOf(p.output) }]);
    }
  }
  return out;
}

/** @param {ModelMessage[]} messages @returns {any[]} [origin, wire] pairs (anthropic: consecutive user-side messages merged) */
function toAnthropic(messages) {
  /** @type {any[]} */
  const out = [];
  for (const m of messages) {
    if (m.role === 'system') continue; // goes in `system`
    /** @type {any[]} */ let blocks;
    if (m.role === 'assistant') {
      const parts = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
      blocks = parts.flatMap((/** @type {any} */ p) => {
        const meta = p.providerOptions?.anthropic;
        if (p.type === 'reasoning' && meta?.signature) return [{ type: 'thinking', thinking: p.text, signature: meta.signature }];
        if (p.type === 'reasoning' && meta?.redactedData) return [{ type: 'redacted_thinking', data: meta.redactedData }];
        if (p.type === 'text') return [{ type: 'text', text: p.text }];
        if (p.type === 'tool-call') return [{ type: 'tool_use', id: p.toolCallId, name: p.toolName, input: p.input }];
        return [];
      });
    } else if (m.role === 'tool') {
      blocks = m.content.flatMap((p) =>
        p.type === 'tool-result' ? [{ type: 'tool_result', tool_use_id: p.toolCallId, content: textOf(p.output) }] : [],
      );
    } else {
      blocks =
        typeof m.content === 'string'
          ? [{ type: 'text', text: m.content }]
          : m.content.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : p));
    }
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const last = out.at(-1);
    if (last && last[1].role === role) {
      last[0].push(m);
      last[1].content.push(...blocks);
    } else out.push([[m], { role, content: blocks }]);
  }
  return out;
}

/**
 * @param {ModelMessage[]} messages
 * @param {Format} format
 * @returns {{wire: any[], back: (wire: any[]) => ModelMessage[]}} the wire messages, and the way back
 */
export function toWire(messages, format) {
  const pairs = format === 'anthropic' ? toAnthropic(messages) : toOpenAIChat(messages);
  /** @type {Map<string, ModelMessage[]>} */
  const origin = new Map();
  /** @type {Map<string, string>} tool call id -> tool name, for results converted back */
  const names = new Map();
  for (const [from, wire] of pairs) {
    const key = JSON.stringify(wire);
    // openai-chat splits one tool message into one wire message per result: restore it once.
    if (!origin.has(key)) origin.set(key, from[0].role === 'tool' && format === 'openai-chat' ? splitTool(from[0], wire) : from);
    for (const m of from) {
      if (m.role === 'assistant' && typeof m.content !== 'string')
        for (const p of m.content) if (p.type === 'tool-call') names.set(p.toolCallId, p.toolName);
    }
  }
  return {
    wire: pairs.map(([, wire]) => wire),
    back: (wire) => wire.flatMap((w) => origin.get(JSON.stringify(w)) ?? fromWire(w, format, names)),
  };
}

/** The one result of a tool message that an openai-chat tool message carries. */
function splitTool(/** @type {any} */ m, /** @type {any} */ wire) {
  return [
    { ...m, content: m.content.filter((/** @type {any} */ p) => p.type === 'tool-result' && p.toolCallId === wire.tool_call_id) },
  ];
}

/**
 * A wire message fit changed, as `ModelMessage`s. Tool outputs come back as text.
 * @param {any} w @param {Format} format @param {Map<string, string>} names
 * @returns {ModelMessage[]}
 */
function fromWire(w, format, names) {
  const text = (/** @type {any} */ c) => (typeof c === 'string' ? c : c.map((/** @type {any} */ b) => b.text ?? '').join(''));
  if (format === 'openai-chat') {
    if (w.role === 'system') return [{ role: 'system', content: text(w.content) }];
    if (w.role === 'user') return [{ role: 'user', content: text(w.content) }];
    if (w.role === 'tool')
      return [
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: w.tool_call_id,
              toolName: names.get(w.tool_call_id) ?? 'unknown',
              output: { type: 'text', value: text(w.content) },
            },
          ],
        },
      ];
    /** @type {any[]} */
    const parts = w.content ? [{ type: 'text', text: text(w.content) }] : [];
    for (const c of w.tool_calls ?? [])
      parts.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input: JSON.parse(c.function.arguments) });
    return [{ role: 'assistant', content: parts }];
  }
  const blocks = typeof w.content === 'string' ? [{ type: 'text', text: w.content }] : w.content;
  if (w.role === 'assistant') {
    /** @type {any[]} */
    const parts = blocks.flatMap((/** @type {any} */ b) =>
      b.type === 'thinking'
        ? [{ type: 'reasoning', text: b.thinking, providerOptions: { anthropic: { signature: b.signature } } }]
        : b.type === 'redacted_thinking'
          ? [{ type: 'reasoning', text: '', providerOptions: { anthropic: { redactedData: b.data } } }]
          : b.type === 'tool_use'
            ? [{ type: 'tool-call', toolCallId: b.id, toolName: b.name, input: b.input }]
            : b.type === 'text'
              ? [{ type: 'text', text: b.text }]
              : [],
    );
    return [{ role: 'assistant', content: parts }];
  }
  const results = blocks.filter((/** @type {any} */ b) => b.type === 'tool_result');
  const rest = blocks.filter((/** @type {any} */ b) => b.type !== 'tool_result');
  /** @type {ModelMessage[]} */
  const out = [];
  if (results.length)
    out.push({
      role: 'tool',
      content: results.map((/** @type {any} */ b) => ({
        type: 'tool-result',
        toolCallId: b.tool_use_id,
        toolName: names.get(b.tool_use_id) ?? 'unknown',
        output: { type: 'text', value: text(b.content ?? '') },
      })),
    });
  if (rest.length)
    out.push({
      role: 'user',
      content: rest.map((/** @type {any} */ b) => (b.type === 'text' ? { type: 'text', text: b.text } : b)),
    });
  return out;
}
