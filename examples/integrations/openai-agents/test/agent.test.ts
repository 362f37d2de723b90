/**
 * End to end over real HTTP: Compactor (`node ../../../dist/server.js`, memory store), a fake
 * Responses API (`fake-responses.ts`) and an @openai/agents run with tools whose
 * `callModelInputFilter` is `compactorInputFilter`. Non-streaming and streaming runs.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CompactorClient, type FetchLike, type FitRequest, type FitResponse } from '@compactor/client';
import { Agent, OpenAIProvider, RunContext, Runner, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { freePort, startCompactor } from '../../shared/compactor-service.mjs';
import { compactorInputFilter, type WireItem } from '../compactor-filter.js';
import { type FakeResponses, type Step, startFakeResponses } from '../fake-responses.js';

const MODEL = 'gpt-4o';
const FILES = ['src/config.ts', 'src/server.ts', 'src/routes.ts', 'src/store.ts', 'src/worker.ts'];
const FINAL = 'The timeout comes from src/config.ts: requestTimeoutMs is 30000 and src/server.ts passes it on.';

type Json = Record<string, unknown>;

/** About 3,000 tokens of made-up TypeScript, different for each path. */
function fileContent(path: string): string {
  const lines = Array.from({ length: 120 }, (_, i) => {
    const n = (i * 7919 + path.length * 104729) % 100_000;
    return `export function handler${i}(input: Request${n % 17}): Promise<Result${n % 13}> { return run('${path}', ${n}); }`;
  });
  return `// ${path}\n${lines.join('\n')}`;
}

const call = (path: string, id: string): Json => ({
  type: 'function_call',
  call_id: id,
  name: 'read_file',
  arguments: JSON.stringify({ path }),
});
/** Five reads (the second with a reasoning item carrying encrypted content), then the answer. */
const script: Step[] = [
  ...FILES.map(
    (path, i): Step =>
      () =>
        i === 1
          ? [
              {
                type: 'reasoning',
                summary: [{ type: 'summary_text', text: 'Check the server next.' }],
                encrypted_content: 'enc_opaque_1',
              },
              call(path, `call_${i}`),
            ]
          : [call(path, `call_${i}`)],
  ),
  () => [{ type: 'message', content: [{ type: 'output_text', text: FINAL }] }],
];

let service: { url: string; stop: () => Promise<void> } | undefined;
let compactorUrl = '';
let fake: FakeResponses;

before(async () => {
  service = await startCompactor();
  compactorUrl = service.url;
  fake = await startFakeResponses(script);
  setTracingDisabled(true);
});

after(async () => {
  await fake?.close();
  await service?.stop();
});

/** What both sides of the wire agree on for one item (the SDK adds ids and statuses of its own). */
function project(item: Json): Json {
  const type = (item.type as string | undefined) ?? 'message';
  const texts = (value: unknown): unknown =>
    typeof value === 'string' ? value : Array.isArray(value) ? value.map((p: Json) => p.text).join('') : value;
  if (type === 'message') return { type, role: item.role, text: texts(item.content) };
  if (type === 'function_call') return { type, call_id: item.call_id, name: item.name, arguments: item.arguments };
  if (type === 'function_call_output') return { type, call_id: item.call_id, output: texts(item.output) };
  if (type === 'reasoning') return { type, summary: texts(item.summary), encrypted_content: item.encrypted_content };
  return item;
}

/** The agent under test: one tool, `read_file`, and a runner that talks to the fake. */
function coder() {
  const readFile = tool({
    name: 'read_file',
    description: 'Read a file of the repository',
    parameters: z.object({ path: z.string() }),
    execute: async ({ path }) => fileContent(path),
  });
  const agent = new Agent({ name: 'coder', instructions: 'You are a careful coding agent.', model: MODEL, tools: [readFile] });
  const runner = new Runner({ modelProvider: new OpenAIProvider({ apiKey: 'sk-test', baseURL: fake.url }) });
  return { agent, runner };
}

const inputOf = (exchange: { request: Json } | undefined): Json[] => (exchange?.request.input as Json[] | undefined) ?? [];

async function runAgent(stream: boolean) {
  fake.reset();
  const fits: { request: FitRequest<WireItem>; response: FitResponse<WireItem> }[] = [];
  const sentToService: Json[] = [];
  // Records what reaches the service, as sent (the client's fetch, wrapped).
  const recordingFetch: FetchLike = (url, init) => {
    if (url.endsWith('/v1/fit') && init.body) sentToService.push(JSON.parse(init.body));
    return fetch(url, init);
  };
  const compactor = new CompactorClient({ baseUrl: compactorUrl, fetch: recordingFetch });
  const runContext = new RunContext<unknown>({});
  const callModelInputFilter = compactorInputFilter({
    compactor,
    model: MODEL,
    runContext,
    fit: { target_fraction: 0.6, context_window: 12_000, compact: { keep_tool_uses: 2 } },
    onFit: (request, response) => fits.push({ request, response }),
  });

  const { agent, runner } = coder();
  const task = 'Find where the request timeout is set.';
  const options = { context: runContext, callModelInputFilter, maxTurns: 20 };
  const result = stream ? await runner.run(agent, task, { ...options, stream: true }) : await runner.run(agent, task, options);
  if ('completed' in result) {
    for await (const _ of result.toStream()) {
      // drain
    }
    await result.completed;
  }
  return { result, fits, sentToService, exchanges: [...fake.exchanges] };
}

for (const stream of [false, true]) {
  test(`Compactor fits the history before each model call (${stream ? 'streaming' : 'non-streaming'})`, async () => {
    const { result, fits, sentToService, exchanges } = await runAgent(stream);

    // (b) The agent finished its task.
    assert.equal(result.finalOutput, FINAL);
    assert.equal(exchanges.length, script.length, 'one model call per scripted step');
    assert.equal(fits.length, exchanges.length, 'one fit before each model call');

    // (a) The model received the history Compactor returned, item for item.
    for (const [k, { request, response }] of fits.entries()) {
      const model = exchanges[k]?.request as Json;
      const expected = (response.applied ? response.messages : request.messages).map(project);
      assert.deepEqual((model.input as Json[]).map(project), expected, `model call ${k}: the fitted history`);
      assert.equal(model.instructions, 'You are a careful coding agent.', `model call ${k}: instructions kept`);
    }
    const reduced = fits.filter((f) => f.response.applied);
    assert.ok(reduced.length > 0, 'fit reduced the history at least once');
    const first = fits.findIndex((f) => f.response.applied);
    assert.ok(first > 0);
    if (process.env.DEBUG_FIT) {
      for (const f of fits)
        console.log(
          JSON.stringify({
            applied: f.response.applied,
            tokens: f.response.tokens,
            cost: f.response.cost?.decision,
            stages: f.response.stages,
            actions: f.response.actions.map((a) => a.action).join(','),
          }),
        );
    }
    const afterReduction = JSON.stringify(exchanges[first]?.request.input);
    assert.ok(/\[compactor:art_/.test(afterReduction), 'the model saw a placeholder');
    const unreduced = JSON.stringify(fits[first]?.request.messages).length;
    assert.ok(afterReduction.length < unreduced * 0.75, "the model got the smaller history, not the runner's");
    // Later calls keep the reduced prefix (the runner's own history still has the originals).
    for (let k = first + 1; k < fits.length; k++) {
      const prev = inputOf(exchanges[k - 1]).map(project);
      const now = inputOf(exchanges[k]).map(project).slice(0, prev.length);
      if (!fits[k]?.response.applied) assert.deepEqual(now, prev, `model call ${k} extends the prompt of call ${k - 1}`);
    }
    assert.ok(
      JSON.stringify(result.history).includes(JSON.stringify(fileContent(FILES[0] as string)).slice(1, -1)),
      'the run keeps the originals',
    );
    // The reasoning item went to Compactor and back to the model with its encrypted content.
    assert.match(JSON.stringify(exchanges[2]?.request.input), /enc_opaque_1/);

    // (c) The provider's usage from call k-1 reached Compactor with fit k, messages_covered included.
    assert.equal(sentToService[0]?.usage, undefined, 'no usage before the first call');
    for (let k = 1; k < sentToService.length; k++) {
      const previous = exchanges[k - 1] as { request: Json; response: Json };
      const usage = previous.response.usage as Json;
      const sent = sentToService[k]?.usage as Json;
      assert.ok(sent, `fit ${k} carries usage`);
      assert.equal(sent.input_tokens, usage.input_tokens);
      assert.equal(sent.output_tokens, usage.output_tokens);
      assert.equal(sent.total_tokens, usage.total_tokens);
      assert.deepEqual(sent.input_tokens_details, usage.input_tokens_details);
      const covered = (previous.request.input as unknown[]).length + (previous.response.output as unknown[]).length;
      assert.equal(sent.messages_covered, covered, `fit ${k}: messages_covered`);
    }
    assert.ok(
      exchanges.some((e) => Number(((e.response.usage as Json).input_tokens_details as Json).cached_tokens) > 0),
      'the fake reported cache reads',
    );
  });
}

test('with onError, a fit that fails leaves the history unchanged and the run goes on', async () => {
  fake.reset();
  const errors: unknown[] = [];
  const port = await freePort(); // nothing listens there
  const runContext = new RunContext<unknown>({});
  const callModelInputFilter = compactorInputFilter({
    compactor: new CompactorClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 2000 }),
    model: MODEL,
    runContext,
    fit: { target_fraction: 0.6 },
    onError: (error) => errors.push(error),
  });
  const { agent, runner } = coder();
  const result = await runner.run(agent, 'Find where the request timeout is set.', { context: runContext, callModelInputFilter });
  assert.equal(result.finalOutput, FINAL);
  assert.equal(errors.length, script.length, 'one failed fit per model call');
  assert.equal(inputOf(fake.exchanges.at(-1)).length, 1 + 2 * FILES.length + 1, 'the whole history went to the model');
});
