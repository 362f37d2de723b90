/**
 * The agent: a LangChain v1 `createAgent` with two file tools and Compactor's middleware.
 * The tools are simulated (they generate a file's content, they touch no disk).
 */
import type { CompactorClient } from '@compactor/client';
import { ChatOpenAI } from '@langchain/openai';
import { createAgent, tool } from 'langchain';
import { z } from 'zod';
import { type CompactorMiddlewareOptions, compactorMiddleware } from './compactor-middleware.js';

/** About 3,000 tokens of made-up TypeScript for `path`. */
export function fileContent(path: string): string {
  const lines = Array.from(
    { length: 110 },
    (_, i) =>
      `export function ${path.replace(/\W/g, '_')}_${i}(input: string): number { return input.length * ${i} + ${(i * 7919) % 1000}; }`,
  );
  return `// ${path}\n${lines.join('\n')}\n`;
}

const readFile = tool(async ({ path }) => fileContent(path), {
  name: 'read_file',
  description: 'Read a file of the repository',
  schema: z.object({ path: z.string() }),
});

const writeFile = tool(async ({ path, content }) => `wrote ${content.length} bytes to ${path}`, {
  name: 'write_file',
  description: 'Write a file of the repository',
  schema: z.object({ path: z.string(), content: z.string() }),
});

export interface AgentSetup {
  /** The OpenAI-compatible endpoint (e.g. `http://127.0.0.1:4000/v1`); OpenAI's when omitted. */
  baseURL?: string;
  apiKey: string;
  model: string;
  compactor: CompactorClient;
  fit?: CompactorMiddlewareOptions['fit'];
  onFit?: CompactorMiddlewareOptions['onFit'];
}

export function buildAgent(setup: AgentSetup) {
  const llm = new ChatOpenAI({
    model: setup.model,
    apiKey: setup.apiKey,
    maxRetries: 0,
    ...(setup.baseURL ? { configuration: { baseURL: setup.baseURL } } : {}),
  });
  return createAgent({
    model: llm,
    tools: [readFile, writeFile],
    systemPrompt: 'You are a careful coding agent.',
    middleware: [compactorMiddleware({ compactor: setup.compactor, model: setup.model, fit: setup.fit, onFit: setup.onFit })],
  });
}
