/**
 * An agent loop on the openai SDK that calls Compactor's `/v1/fit` (through `@compactor/client`)
 * before each model call and keeps the history Compactor returns.
 *
 * Run: `npm run example:agent` — with no account needed:
 * - without `OPENAI_API_KEY` it talks to a bundled fake model (`examples/fake-model.ts`) that asks
 *   for a few tool calls and then answers; with it, to OpenAI (or `OPENAI_BASE_URL`), model
 *   `AGENT_MODEL` (default `gpt-4o`);
 * - without `COMPACTOR_URL` it starts Compactor itself (`node dist/server.js`, memory store, a
 *   free port) and stops it at the end; `COMPACTOR_API_KEY` is sent when set.
 * The tool is simulated (it prints a made-up listing, it runs nothing), so that any model is safe.
 * `AGENT_CONTEXT_WINDOW` (default 8000 with the fake model) makes the history outgrow the window
 * quickly, so that fit has something to do.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { CompactorClient } from '@compactor/client';
import OpenAI from 'openai';
import { startFakeModel } from './fake-model.js';

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

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

/** A simulated tool: a long, made-up output, as a real `ls` or `cat` of a repository gives. */
function runTool(args: string): string {
  const { command } = JSON.parse(args) as { command: string };
  const lines = Array.from({ length: 150 }, (_, i) => `${command} | src/module-${i}.ts: ${(i * 7919) % 10_000} bytes, ok`);
  return `$ ${command}\n${lines.join('\n')}`;
}

export interface AgentOptions {
  openai: OpenAI;
  compactor: CompactorClient;
  model: string;
  contextWindow?: number | undefined;
  maxSteps?: number;
  log?: (line: string) => void;
}

export interface AgentResult {
  answer: string;
  fitCalls: number;
  /** Calls of fit that changed the history, with its size before and after. */
  reductions: { before: number; after: number; messagesBefore: number; messagesAfter: number }[];
}

export async function agent(task: string, options: AgentOptions): Promise<AgentResult> {
  const { openai, compactor, model, log = () => {} } = options;
  let messages: Message[] = [
    { role: 'system', content: 'You are a careful coding agent.' },
    { role: 'user', content: task },
  ];
  let usage: OpenAI.Completions.CompletionUsage | undefined;
  let covered = 0;
  const result: AgentResult = { answer: '(step limit reached)', fitCalls: 0, reductions: [] };
  for (let step = 1; step <= (options.maxSteps ?? 50); step++) {
    // Before each call: fit the history into 60% of the window (a no-op below that).
    const fitted = await compactor.fit({
      messages,
      model,
      tools,
      target_fraction: 0.6,
      ...(options.contextWindow ? { context_window: options.contextWindow } : {}),
      ...(usage ? { usage: { ...usage, messages_covered: covered } } : {}),
    });
    result.fitCalls++;
    const { before, after } = fitted.tokens;
    if (fitted.applied) {
      result.reductions.push({ before, after, messagesBefore: messages.length, messagesAfter: fitted.messages.length });
      const stages = fitted.stages.filter((s) => s.applied).map((s) => s.strategy);
      log(`step ${step}: fit reduced the history from ${before} to ${after} tokens (${stages.join(', ')})`);
    } else {
      log(`step ${step}: fit left the history as it was (${before} tokens, ${fitted.reason ?? 'no reason given'})`);
    }
    messages = fitted.messages;
    const res = await openai.chat.completions.create({ model, messages, tools });
    const reply = res.choices[0]?.message;
    if (!reply) break;
    messages.push(reply);
    usage = res.usage;
    covered = messages.length;
    if (!reply.tool_calls?.length) {
      result.answer = reply.content ?? '';
      return result;
    }
    for (const call of reply.tool_calls) {
      if (call.type !== 'function') continue;
      log(`step ${step}: the model calls ${call.function.name} ${call.function.arguments}`);
      messages.push({ role: 'tool', tool_call_id: call.id, content: runTool(call.function.arguments) });
    }
  }
  return result;
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Starts `node dist/server.js` with a memory store on a free port (building dist/ first if missing). */
async function startCompactor(): Promise<{ url: string; child: ChildProcess }> {
  const root = fileURLToPath(new URL('../', import.meta.url));
  if (!existsSync(`${root}dist/server.js`)) {
    console.log('building Compactor (npm run build)…');
    const built = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    if (built.status !== 0) throw new Error('npm run build failed');
  }
  const port = await freePort();
  // The service started here has no keys: a client key in this shell (COMPACTOR_API_KEY) is not
  // its configuration, and the service refuses it without COMPACTOR_API_KEYS.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'COMPACTOR_API_KEY'));
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: root,
    env: { ...inherited, COMPACTOR_STORE_URL: 'memory:', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const probe = new CompactorClient({ baseUrl: url, timeoutMs: 1000 });
  // Readiness is polled until a deadline generous enough for a slow or busy machine (120 s).
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`Compactor exited with ${child.exitCode}`);
    const health = await probe.health().catch(() => undefined);
    if (health?.status === 'ready') return { url, child };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill();
  throw new Error('Compactor did not become ready in 120 s');
}

async function main(): Promise<void> {
  const task = process.argv[2] ?? 'Survey this repository and say what it is.';
  const cleanup: (() => Promise<unknown> | unknown)[] = [];
  try {
    let compactorUrl = process.env.COMPACTOR_URL;
    if (!compactorUrl) {
      const started = await startCompactor();
      cleanup.push(() => {
        started.child.kill('SIGTERM');
        return once(started.child, 'exit');
      });
      compactorUrl = started.url;
      console.log(`Compactor started at ${compactorUrl} (memory store)`);
    }
    let openai: OpenAI;
    let contextWindow = Number(process.env.AGENT_CONTEXT_WINDOW) || undefined;
    if (process.env.OPENAI_API_KEY) {
      openai = new OpenAI({ timeout: 60_000, maxRetries: 2 });
    } else {
      const fake = await startFakeModel();
      cleanup.push(() => fake.close());
      openai = new OpenAI({ apiKey: 'fake', baseURL: fake.url, timeout: 10_000, maxRetries: 0 });
      contextWindow ??= 8000;
      console.log(`no OPENAI_API_KEY: using the bundled fake model at ${fake.url}`);
    }
    const compactor = new CompactorClient({ baseUrl: compactorUrl, apiKey: process.env.COMPACTOR_API_KEY });
    const model = process.env.AGENT_MODEL ?? 'gpt-4o';
    const result = await agent(task, { openai, compactor, model, contextWindow, log: console.log });
    console.log(`answer: ${result.answer}`);
    console.log(`fit was called ${result.fitCalls} times and reduced the history ${result.reductions.length} times`);
    for (const r of result.reductions) {
      console.log(`  ${r.before} -> ${r.after} tokens (${r.messagesBefore} -> ${r.messagesAfter} messages)`);
    }
  } finally {
    for (const step of cleanup.reverse()) await step();
  }
}

if (process.argv[1]?.endsWith('agent-loop.ts')) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
