/**
 * A fake OpenAI Chat Completions API (`POST /v1/chat/completions`) over real HTTP, node:http only.
 * It answers a fixed script (a tool call per turn, then a final answer), reports usage as the real
 * API does (`prompt_tokens`, `completion_tokens`, `total_tokens`, `prompt_tokens_details.cached_tokens`:
 * the prefix shared with the previous request, in 128-token steps from 1,024 on), records every
 * request, and answers 400 to what the real API rejects: a tool message that answers no call of
 * the assistant message before it, or a call left unanswered.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';

/**
 * @param {any} body a Chat Completions request
 * @returns {string | undefined} why the real API would reject it
 */
export function violation(body) {
  const { messages } = body;
  if (!Array.isArray(messages) || messages.length === 0) return "'messages' must contain at least one message";
  /** @type {string[]} */ let open = [];
  for (const [i, m] of messages.entries()) {
    if (m.role === 'tool') {
      if (!open.includes(m.tool_call_id))
        return `Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls' (messages.[${i}])`;
      open = open.filter((id) => id !== m.tool_call_id);
      continue;
    }
    if (open.length)
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${open.join(', ')}`;
    if (m.role === 'assistant') {
      if (m.content == null && !m.tool_calls?.length) return `messages.[${i}]: an assistant message needs content or tool_calls`;
      open = (m.tool_calls ?? []).map((/** @type {any} */ c) => c.id);
    }
  }
  return undefined;
}

/**
 * @param {{reads: string[], answer: string}[]} script for each task, the files read, then the answer
 * @returns {Promise<{url: string, requests: any[], replies: any[], close: () => Promise<void>}>}
 */
export async function startFakeOpenAI(script) {
  /** @type {any[]} */ const requests = [];
  /** @type {any[]} */ const replies = [];
  /** @type {string[]} */ let previous = [];
  let call = 0;
  let task = 0;
  let read = 0;
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const send = (/** @type {number} */ status, /** @type {unknown} */ body) => {
      res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_fake_${call}` });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
      return send(404, { error: { message: `no route ${req.url}` } });
    const body = JSON.parse(raw);
    requests.push(body);
    const invalid = violation(body);
    const step = script[task];
    if (invalid || !step) {
      replies.push({ error: invalid ?? 'the script is over' });
      return send(400, {
        error: { message: invalid ?? 'the script is over', type: 'invalid_request_error', param: 'messages', code: null },
      });
    }
    call++;
    /** @type {any} */ let message;
    if (read < step.reads.length) {
      const path = step.reads[read++];
      const args = JSON.stringify({ path });
      message = {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: `call_fake_${String(call).padStart(2, '0')}`,
            type: 'function',
            function: { name: 'read_file', arguments: args },
          },
        ],
        refusal: null,
        annotations: [],
      };
    } else {
      message = { role: 'assistant', content: step.answer, refusal: null, annotations: [] };
      task++;
      read = 0;
    }
    // Automatic prompt caching: the longest prefix shared with the previous request, from 1,024 tokens on, in 128-token steps.
    const segs = [JSON.stringify(body.tools ?? null), ...body.messages.map((/** @type {unknown} */ m) => JSON.stringify(m))];
    const size = (/** @type {string[]} */ s) => s.reduce((n, x) => n + Math.ceil(x.length / 4), 0);
    let same = 0;
    while (same < Math.min(previous.length, segs.length) && previous[same] === segs[same]) same++;
    const shared = size(segs.slice(0, same));
    const cached = shared >= 1024 ? Math.floor(shared / 128) * 128 : 0;
    previous = segs;
    const prompt = size(segs) + 3;
    const completion = Math.ceil(JSON.stringify(message).length / 4);
    const reply = {
      id: `chatcmpl-fake${String(call).padStart(2, '0')}`,
      object: 'chat.completion',
      created: 1_764_590_000 + call,
      model: body.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        prompt_tokens_details: { cached_tokens: cached, audio_tokens: 0 },
        completion_tokens_details: {
          reasoning_tokens: 0,
          audio_tokens: 0,
          accepted_prediction_tokens: 0,
          rejected_prediction_tokens: 0,
        },
      },
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
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
