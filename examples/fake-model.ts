/**
 * A fake OpenAI-compatible model server (node:http, no dependencies) for running the example agent
 * without an account: `POST /v1/chat/completions` answers with scripted tool calls, one per call,
 * then with a final answer. Run alone: `npx tsx examples/fake-model.ts` prints its base URL.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The commands the fake agent asks for, in order; after the last one it answers. */
export const SCRIPT = [
  'ls -R src',
  'cat package.json',
  'grep -rn "TODO" src',
  'wc -l src/**/*.ts',
  'git log --oneline -n 40',
  'cat src/app.ts',
  'grep -rn "export" src/index.ts',
];

export interface FakeModel {
  /** Base URL for the openai SDK (`…/v1`). */
  url: string;
  /** Chat completions answered so far. */
  calls: number;
  close(): Promise<void>;
}

interface ChatRequest {
  model?: string;
  messages?: unknown[];
}

/** Starts the fake model on a free port of 127.0.0.1. */
export async function startFakeModel(script: readonly string[] = SCRIPT): Promise<FakeModel> {
  const state = { calls: 0 };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequest;
    const step = state.calls++;
    const command = script[step];
    const message = command
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: `call_${step + 1}`, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } },
          ],
        }
      : { role: 'assistant', content: `Done after ${step} tool calls: the repository is a TypeScript service.` };
    // A rough usage report (about 4 characters a token), as a provider would send it.
    const prompt = Math.ceil(JSON.stringify(body.messages ?? []).length / 4);
    const completion = Math.ceil(JSON.stringify(message).length / 4);
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: `chatcmpl-fake-${step}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model ?? 'fake',
        choices: [{ index: 0, message, finish_reason: command ? 'tool_calls' : 'stop' }],
        usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    get calls() {
      return state.calls;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1]?.endsWith('fake-model.ts')) {
  const model = await startFakeModel();
  console.log(`fake model listening: OPENAI_BASE_URL=${model.url}`);
}
