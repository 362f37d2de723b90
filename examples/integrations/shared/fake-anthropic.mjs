/**
 * A fake Anthropic Messages API (`POST /v1/messages`) over real HTTP, node:http only. It answers a
 * fixed script (thinking + tool_use turns, then a final answer per task), reports usage as the real
 * API does (`input_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`,
 * `output_tokens`, from the prompt's size and the previous request's cached prefix), records every
 * request, and rejects with a 400 what the real API would reject: roles that do not alternate,
 * tool_result blocks that are not first in their message or answer no call, calls left unanswered,
 * a thinking block whose text no longer matches its signature, and a tool-use loop whose last
 * assistant message does not start with its thinking block.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';

/** Rough token count: the real API's tokenizer is not public; about 3.6 characters of JSON a token. */
export const tokensOf = (/** @type {unknown} */ value) => Math.ceil(JSON.stringify(value ?? '').length / 3.6);

const sign = (/** @type {string} */ thinking) =>
  createHash('sha256').update(`fake-anthropic-key:${thinking}`).digest('base64').repeat(4); // real ones are long

/**
 * @param {any} body a Messages request
 * @returns {string | undefined} why the real API would reject it
 */
export function violation(body) {
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return 'messages: at least one message is required';
  if (messages[0].role !== 'user') return 'messages: the first message must use the "user" role';
  let breakpoints = [body.system, body.tools].flat().filter((b) => b?.cache_control).length;
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (i > 0 && m.role === messages[i - 1].role) return `messages.${i}: roles must alternate between "user" and "assistant"`;
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (!blocks.length && !(m.role === 'assistant' && i === messages.length - 1)) return `messages.${i}: content is empty`;
    breakpoints += blocks.filter((b) => b.cache_control).length;
    for (const [j, b] of blocks.entries()) {
      if (b.type === 'tool_result' && blocks.slice(0, j).some((x) => x.type !== 'tool_result'))
        return `messages.${i}.content.${j}: tool_result blocks must come first in their user message`;
      if ((b.type === 'thinking' && b.signature !== sign(b.thinking)) || (b.type === 'thinking' && m.role !== 'assistant'))
        return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
    }
    const calls = m.role === 'assistant' ? blocks.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
    const results = blocks.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    const previous = i > 0 && typeof messages[i - 1].content !== 'string' ? messages[i - 1].content : [];
    const asked = previous.filter((b) => b.type === 'tool_use').map((b) => b.id);
    if (m.role === 'user' && results.some((id) => !asked.includes(id)))
      return `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks`;
    if (calls.length && i + 1 < messages.length) {
      const next = messages[i + 1].content;
      const answered = typeof next === 'string' ? [] : next.filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
      if (calls.some((id) => !answered.includes(id)))
        return `messages.${i + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after`;
    }
  }
  if (breakpoints > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`;
  const last = messages[messages.length - 1];
  const loop = last.role === 'user' && Array.isArray(last.content) && last.content.some((b) => b.type === 'tool_result');
  if (body.thinking?.type === 'enabled' && loop) {
    const assistant = messages.at(-2);
    if (assistant?.content?.[0]?.type !== 'thinking' && assistant?.content?.[0]?.type !== 'redacted_thinking')
      return `messages.${messages.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${assistant?.content?.[0]?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block`;
  }
  return undefined;
}

/** The request without cache_control markers, split where the cache can match: tools, system, each message. */
function segments(/** @type {any} */ body) {
  const strip = (/** @type {unknown} */ v) =>
    JSON.parse(JSON.stringify(v ?? null, (k, x) => (k === 'cache_control' ? undefined : x)));
  return [strip(body.tools), strip(body.system), ...body.messages.map(strip)].map((s) => JSON.stringify(s));
}

/**
 * @param {{reads: string[], answer: string}[]} script for each task (one real user message), the files
 *   the model reads (one tool call each), then its answer
 * @returns {Promise<{url: string, requests: any[], replies: any[], close: () => Promise<void>}>}
 */
export async function startFakeAnthropic(script) {
  /** @type {any[]} */ const requests = [];
  /** @type {any[]} */ const replies = [];
  /** @type {string[]} */ let cached = [];
  let call = 0;
  let task = 0;
  let read = 0;
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const send = (/** @type {number} */ status, /** @type {unknown} */ body) => {
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_fake_${call}` });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/v1/messages')
      return send(404, { type: 'error', error: { type: 'not_found_error', message: req.url } });
    const body = JSON.parse(raw);
    requests.push(body);
    const invalid = violation(body);
    if (invalid) {
      replies.push({ error: invalid });
      return send(400, { type: 'error', error: { type: 'invalid_request_error', message: invalid } });
    }
    call++;
    const step = script[task];
    if (!step) return send(400, { type: 'error', error: { type: 'invalid_request_error', message: 'the script is over' } });
    /** @type {any[]} */ let content;
    if (read < step.reads.length) {
      const path = step.reads[read++];
      const thinking = `Task ${task + 1}, step ${read}: to answer I need ${path}; reading it next.`;
      content = [
        { type: 'thinking', thinking, signature: sign(thinking) },
        { type: 'text', text: `Reading ${path}.` },
        { type: 'tool_use', id: `toolu_fake_${String(call).padStart(2, '0')}`, name: 'read_file', input: { path } },
      ];
    } else {
      const thinking = `Task ${task + 1}: I have read ${step.reads.join(', ')}; time to answer.`;
      content = [
        { type: 'thinking', thinking, signature: sign(thinking) },
        { type: 'text', text: step.answer },
      ];
      task++;
      read = 0;
    }
    // Prompt caching: the prefix up to the last cache_control breakpoint is cached; what matches the
    // previous request's cached prefix is read, the rest of it written; after the breakpoint is input.
    const segs = segments(body);
    const marked = [body.tools, body.system, ...body.messages.map((/** @type {any} */ m) => m.content)].map((v) =>
      JSON.stringify(v ?? null).includes('"cache_control"'),
    );
    const breakpoint = marked.lastIndexOf(true);
    let same = 0;
    while (same < Math.min(cached.length, breakpoint + 1) && cached[same] === segs[same]) same++;
    const size = (/** @type {string[]} */ s) => s.reduce((n, x) => n + Math.ceil(x.length / 3.6), 0);
    const read_ = size(segs.slice(0, same));
    const written = size(segs.slice(same, breakpoint + 1));
    cached = segs.slice(0, breakpoint + 1);
    const reply = {
      id: `msg_fake_${String(call).padStart(2, '0')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: content.at(-1).type === 'tool_use' ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: size(segs.slice(breakpoint + 1)) + 3,
        cache_creation_input_tokens: written,
        cache_read_input_tokens: read_,
        cache_creation: { ephemeral_5m_input_tokens: written, ephemeral_1h_input_tokens: 0 },
        output_tokens: tokensOf(content),
        service_tier: 'standard',
      },
    };
    replies.push(reply);
    send(200, reply);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    replies,
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
