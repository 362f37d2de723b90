/**
 * A fake OpenAI-compatible model over real HTTP (`POST /v1/chat/completions`, node:http only):
 * it plays a script of replies (tool calls, then an answer) in order, one per request, and
 * records every request body and every reply. Its usage is realistic: `prompt_tokens` about a
 * quarter of the request's characters, `prompt_tokens_details.cached_tokens` the part of the
 * prompt (whole messages, in 128-token steps as OpenAI caches) that repeats the previous request.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';

export type ScriptedReply = { toolCalls: { name: string; args: Record<string, unknown> }[] } | { answer: string };

export interface RecordedRequest {
  model: string;
  messages: Record<string, unknown>[];
  tools?: unknown[];
  stream?: boolean;
}

export interface FakeModel {
  url: string;
  requests: RecordedRequest[];
  /** The completion objects sent back, in order. */
  replies: { usage: Record<string, unknown>; choices: { message: Record<string, unknown> }[] }[];
  close(): Promise<void>;
}

const tokens = (value: unknown): number => Math.ceil(JSON.stringify(value).length / 4);

function cachedTokens(previous: RecordedRequest | undefined, current: RecordedRequest): number {
  if (!previous) return 0;
  let same = tokens(current.tools ?? []);
  for (let i = 0; i < current.messages.length && i < previous.messages.length; i++) {
    if (JSON.stringify(current.messages[i]) !== JSON.stringify(previous.messages[i])) break;
    same += tokens(current.messages[i]);
  }
  return same < 1024 ? 0 : Math.floor(same / 128) * 128;
}

export async function startFakeModel(script: ScriptedReply[]): Promise<FakeModel> {
  const requests: RecordedRequest[] = [];
  const replies: FakeModel['replies'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return send(404, { error: { message: 'not found' } });
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RecordedRequest;
      if (body.stream) return send(400, { error: { message: 'the fake model does not stream' } });
      const step = script[requests.length];
      requests.push(body);
      if (!step) return send(500, { error: { message: `no scripted reply for request ${requests.length}` } });
      const n = requests.length;
      const message =
        'answer' in step
          ? { role: 'assistant', content: step.answer, refusal: null }
          : {
              role: 'assistant',
              content: null,
              refusal: null,
              tool_calls: step.toolCalls.map((call, i) => ({
                id: `call_${n}_${i}`,
                type: 'function',
                function: { name: call.name, arguments: JSON.stringify(call.args) },
              })),
            };
      const prompt = tokens(body.messages) + tokens(body.tools ?? []);
      const completion = tokens(message);
      const reply = {
        id: `chatcmpl-fake-${n}`,
        object: 'chat.completion',
        created: 1_760_000_000 + n,
        model: body.model,
        system_fingerprint: 'fp_fake',
        choices: [{ index: 0, message, logprobs: null, finish_reason: 'answer' in step ? 'stop' : 'tool_calls' }],
        usage: {
          prompt_tokens: prompt,
          completion_tokens: completion,
          total_tokens: prompt + completion,
          prompt_tokens_details: { cached_tokens: cachedTokens(requests.at(-2), body), audio_tokens: 0 },
          completion_tokens_details: {
            reasoning_tokens: 0,
            audio_tokens: 0,
            accepted_prediction_tokens: 0,
            rejected_prediction_tokens: 0,
          },
        },
      };
      replies.push(reply);
      send(200, reply);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}/v1`,
    requests,
    replies,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
