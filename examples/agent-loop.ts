/**
 * An agent loop with the openai SDK that calls Compactor's `/v1/fit` before each model call.
 * Run: `COMPACTOR_URL=http://127.0.0.1:8080 OPENAI_API_KEY=… npx tsx examples/agent-loop.ts`
 * (or compile it with the project). The history the agent keeps is the one Compactor returns.
 */
import OpenAI from 'openai';
import { CompactorClient } from '../src/client.js';

const model = process.env.AGENT_MODEL ?? 'gpt-4o';
const openai = new OpenAI();
const compactor = new CompactorClient({
  baseUrl: process.env.COMPACTOR_URL ?? 'http://127.0.0.1:8080',
  apiKey: process.env.COMPACTOR_API_KEY,
});

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: {
      name: 'bash',
      description: 'Run a shell command',
      parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
    },
  },
];

async function runTool(name: string, args: string): Promise<string> {
  const { command } = JSON.parse(args) as { command: string };
  return `(${name} would run: ${command})`;
}

export async function agent(task: string, maxSteps = 50): Promise<string> {
  let messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'You are a careful coding agent.' },
    { role: 'user', content: task },
  ];
  let usage: OpenAI.Completions.CompletionUsage | undefined;
  let covered = 0;
  for (let step = 0; step < maxSteps; step++) {
    // Before each call: fit the history into 60% of the window (a no-op below that).
    const fitted = await compactor.fit({
      messages,
      model,
      tools,
      target_fraction: 0.6,
      ...(usage ? { usage: { ...usage, messages_covered: covered } } : {}),
    });
    messages = fitted.messages as typeof messages;
    const res = await openai.chat.completions.create({ model, messages, tools });
    const reply = res.choices[0]?.message;
    if (!reply) break;
    messages.push(reply);
    usage = res.usage;
    covered = messages.length;
    if (!reply.tool_calls?.length) return reply.content ?? '';
    for (const call of reply.tool_calls) {
      if (call.type !== 'function') continue;
      messages.push({ role: 'tool', tool_call_id: call.id, content: await runTool(call.function.name, call.function.arguments) });
    }
  }
  return '(step limit reached)';
}

if (process.argv[1]?.endsWith('agent-loop.ts')) {
  agent(process.argv[2] ?? 'List the files in this repository.').then(console.log, console.error);
}
