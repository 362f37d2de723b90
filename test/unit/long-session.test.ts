import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { bypassReason, clientRecords, quantile, upstreamRecords } from '../support/long-session/analysis.js';
import { claudeEnv, codexToml, REDUCE_NOTHING } from '../support/long-session/config.js';
import { serviceEnv } from '../support/long-session/driver.js';
import { billOf, figuresOf } from '../support/long-session/figures.js';
import { type RelayedCall, SEQ_HEADER } from '../support/long-session/relay.js';
import { compactionSummary, isCompaction, longSession, stepCommand, TASK_TEXT } from '../support/long-session/scenario.js';
import { buildKnows } from '../support/long-session/service.js';
import { readRequest, route } from '../support/provider/parse.js';
import type { JsonObject, ModelRequest, RecordedRequest, Reply } from '../support/provider/types.js';

// The long-session harness's pure parts (test/support/long-session/): the scenario, the records and the bill.

function request(body: JsonObject, path = '/v1/messages', headers: Record<string, string> = {}): ModelRequest {
  const r = route('POST', path, new URLSearchParams());
  if (!r) throw new Error(`no route ${path}`);
  return readRequest(0, r, body, headers, path);
}

const bash = {
  name: 'Bash',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
const result = (id: string) => ({ role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'out' }] });
const use = (id: string) => ({ role: 'assistant', content: [{ type: 'tool_use', id, name: 'Bash', input: {} }] });

t.test('isCompaction: Codex by its marks, Claude Code by its instruction; an ordinary mention is not one', async (t) => {
  const codexBody = { model: 'm', input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] };
  t.ok(isCompaction(request(codexBody, '/v1/responses', { 'x-codex-turn-metadata': '{"request_kind":"compaction"}' })));
  t.ok(isCompaction(request({ model: 'm', input: [{ type: 'compaction_trigger' }] }, '/v1/responses')));
  t.notOk(isCompaction(request(codexBody, '/v1/responses', { 'x-codex-turn-metadata': '{"request_kind":"turn"}' })));
  const claude = user('Your task is to create a detailed summary of the conversation so far, paying close attention to…');
  t.ok(isCompaction(request({ model: 'm', messages: [user('task'), claude], tools: [bash] })));
  t.notOk(isCompaction(request({ model: 'm', messages: [user('please compact the logs and summarize the errors')] })));
});

t.test('longSession: the step is remembered per conversation, so a compacted history goes on where it was', async (t) => {
  const scenario = longSession({ calls: 2, summaryChars: 500 });
  const headers = { 'x-claude-code-session-id': 's1' };
  const first = (await scenario(
    request({ model: 'm', messages: [user(TASK_TEXT)], tools: [bash] }, '/v1/messages', headers),
  )) as Reply;
  t.match(JSON.stringify(first.toolCalls?.[0]?.input), /module_01/);
  const history = [user(TASK_TEXT), use('a'), result('a')];
  const second = (await scenario(request({ model: 'm', messages: history, tools: [bash] }, '/v1/messages', headers))) as Reply;
  t.match(JSON.stringify(second.toolCalls?.[0]?.input), /module_02/);
  // After the agent's own compaction: no tool result left, the step is still the third.
  const summary = (await scenario(
    request(
      { model: 'm', messages: [...history, user('create a detailed summary of the conversation')], tools: [bash] },
      '/v1/messages',
      headers,
    ),
  )) as Reply;
  t.match(String(summary.text), /<summary>[\s\S]*Task LS-4217[\s\S]*<\/summary>$/);
  const after = (await scenario(
    request({ model: 'm', messages: [user('Summary …')], tools: [bash] }, '/v1/messages', headers),
  )) as Reply;
  t.equal(after.toolCalls, undefined, 'the final answer, not step 1 again');
  t.match(String(after.text), /Done: ran 2 listings/);
});

t.test('longSession: Codex default model gets its command through the code-mode exec tool', async (t) => {
  const tools = [{ type: 'namespace', name: 'functions', tools: [{ type: 'custom', name: 'exec', format: {} }] }];
  const body = { model: 'gpt-6.2-sol', input: [{ type: 'additional_tools', role: 'developer', tools }, user(TASK_TEXT)] };
  const reply = (await longSession()(request(body, '/v1/responses'))) as Reply;
  t.equal(reply.toolCalls?.[0]?.name, 'exec');
  t.match(String(reply.toolCalls?.[0]?.input.input), /^const r = await tools\.exec_command\(\{ cmd: "seq -f/);
});

t.test('stepCommand and compactionSummary: sizes as the issue asks', async (t) => {
  for (const step of [0, 5, 59]) {
    const lines = Number(/ 1 (\d+)$/.exec(stepCommand(step, 10_000))?.[1]);
    t.ok(lines * 92 >= 7_500 && lines * 92 <= 14_000, `step ${step}: ${lines} lines of about 92 characters`);
  }
  const s = compactionSummary(3, 8000);
  t.ok(s.length >= 8000 && s.length < 8200 && s.includes(TASK_TEXT));
});

t.test('config: Codex as the README writes it, no model line; own compaction only when asked', async (t) => {
  const plain = codexToml('http://127.0.0.1:1/openai', 'proxied');
  t.notMatch(plain, /^model\s*=/m);
  t.match(plain, /base_url = "http:\/\/127\.0\.0\.1:1\/openai\/v1"/);
  t.notMatch(plain, /model_context_window/);
  t.match(codexToml('http://x', 'own'), /model_context_window = 64000\nmodel_auto_compact_token_limit = 51200/);
  t.same(claudeEnv('straight'), { DISABLE_AUTO_COMPACT: '1' });
  t.same(claudeEnv('both'), { CLAUDE_CODE_AUTO_COMPACT_WINDOW: '100000', CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: '80' });
  t.same(claudeEnv('instant'), claudeEnv('own'), 'way instant: the agent compacts where it does on its own');
  t.match(codexToml('http://x', 'instant'), /model_auto_compact_token_limit = 51200/);
});

t.test(
  "serviceEnv: way instant reduces nothing (only instant compaction acts); extra proxy options over the way's",
  async (t) => {
    const options = (env: Record<string, string>) => JSON.parse(env.COMPACTOR_PROXY_OPTIONS ?? '{}') as Record<string, unknown>;
    t.same(options(serviceEnv('claude-code', 'f', 's', '/nowhere', 'proxied')), { context_window: 100000 });
    t.same(options(serviceEnv('claude-code', 'f', 's', '/nowhere', 'instant')), { context_window: 100000, ...REDUCE_NOTHING });
    t.same(options(serviceEnv('codex', 'f', 's', '/nowhere', 'instant', { instant_compaction_share: 0.3 })), {
      ...REDUCE_NOTHING,
      instant_compaction_share: 0.3,
    });
    t.equal(serviceEnv('codex', 'f', 's', '/nowhere', 'proxied').COMPACTOR_PROXY_OPTIONS, undefined, 'Codex proxied: as before');
  },
);

t.test('longSession: every answer but a compaction after callDelayMs, a compaction after compactionDelayMs', async (t) => {
  const scenario = longSession({ calls: 1, callDelayMs: 40, compactionDelayMs: 900 });
  const step = (await scenario(request({ model: 'm', messages: [user(TASK_TEXT)], tools: [bash] }))) as Reply;
  t.equal(step.delayMs, 40);
  const done = (await scenario(
    request({ model: 'm', messages: [user(TASK_TEXT), use('a'), result('a')], tools: [bash] }),
  )) as Reply;
  t.equal(done.delayMs, 40, 'the final answer too');
  const compaction = (await scenario(
    request({ model: 'm', messages: [user(TASK_TEXT), user('create a detailed summary of the conversation')], tools: [bash] }),
  )) as Reply;
  t.equal(compaction.delayMs, 900);
  t.equal(
    ((await longSession()(request({ model: 'm', messages: [user(TASK_TEXT)], tools: [bash] }))) as Reply).delayMs,
    undefined,
  );
});

function recorded(
  seq: number,
  messages: unknown[],
  relaySeq: number,
  receivedAt: number,
  input: number,
  read: number,
): RecordedRequest {
  const json = { model: 'm', tools: [bash], messages } as JsonObject;
  return {
    seq,
    method: 'POST',
    url: '/v1/messages',
    path: '/v1/messages',
    headers: { 'x-claude-code-session-id': 's', [SEQ_HEADER]: String(relaySeq) },
    raw: Buffer.from(JSON.stringify(json)),
    json,
    wire: 'anthropic',
    endpoint: 'model',
    receivedAt,
    timing: { bodyMs: 1, endMs: 11 },
    status: 200,
    usage: { input, output: 10, cacheRead: read, cacheWrite: input - read },
  };
}

function relayed(seq: number, forwardAt: number, compactor?: string): RelayedCall {
  const body = Buffer.from(JSON.stringify({ model: 'm', tools: [bash], messages: [user(TASK_TEXT)] }));
  return {
    seq,
    method: 'POST',
    url: '/v1/messages',
    headers: {},
    body,
    forwardAt,
    endAt: forwardAt + 50,
    ...(compactor ? { compactor } : {}),
  };
}

t.test('records: task, prefix extension (cache markers ignored), holds, summarizer overlap, bill', async (t) => {
  const marked = { role: 'user', content: [{ type: 'text', text: TASK_TEXT, cache_control: { type: 'ephemeral' } }] };
  const requests = [
    recorded(0, [user(TASK_TEXT)], 0, 1_005, 1000, 0),
    recorded(1, [marked, use('a'), result('a')], 1, 2_400, 1200, 1000),
    recorded(2, [user('a summary without the task')], 2, 3_010, 300, 0),
    recorded(3, [user('a summary without the task'), user('more')], 3, 6_000, 300, 300),
  ];
  const relay = [
    relayed(0, 1_000, 'unchanged'),
    relayed(1, 2_000, 'kept'),
    relayed(2, 3_000, 'bypass; reason=options_invalid'),
    relayed(3, 4_000, 'reduced'),
  ];
  const summarizer = [
    { start: 1_900, end: 2_350, promptChars: 400, outputChars: 80 },
    { start: 3_500, end: 5_000, promptChars: 0, outputChars: 0 },
  ];
  const up = upstreamRecords(requests, relay, summarizer);
  t.same(
    up.map((u) => [
      u.taskPresent,
      u.extendsPrevious,
      u.heldMs,
      u.summarizerRunning,
      u.summarizerEnded,
      u.summarizerInside,
      u.compactor,
    ]),
    [
      [true, undefined, 5, false, false, false, 'unchanged'],
      [true, true, 400, true, true, false, 'kept'],
      [false, false, 10, false, false, false, 'bypass; reason=options_invalid'],
      [false, true, 2000, true, true, false, 'reduced'],
    ],
  );
  const client = clientRecords(relay, up);
  t.same(
    client.map((c) => [c.kind, c.forwarded, c.durationMs]),
    [
      ['call', true, 50],
      ['call', true, 50],
      ['call', true, 50],
      ['call', true, 50],
    ],
  );
  // The first three: reads 1000 × 0.1; writes (1000 + 200 + 300) × 1.25; output 30 × 5; summarizer 100 + 20 × 5.
  const first = billOf(up.slice(0, 3), summarizer.slice(0, 1));
  t.same(first, { cacheRead: 100, cacheWrite: 1875, output: 150, summarizer: 200, total: 2325 });
  t.equal(billOf(up, summarizer.slice(0, 1)).total, 2325 + 30 + 50, 'the fourth: 300 read, 10 out');
  const f = figuresOf(up, client, summarizer, 1100);
  t.same(f.overWindow, [1]);
  t.same(f.taskMissing, [2, 3]);
  t.equal(f.prefixBreaks, 1);
  t.same(f.bypass, { options_invalid: 1 });
  t.same(f.outcomes, { unchanged: 1, kept: 1, bypass: 1, reduced: 1 });
  t.same(f.heldWhileSummarizing, [1, 3]);
  t.same(f.waitedOnSummarizer, [3], 'held 2 s and let go after a call ended; a 400 ms hold beside one is not a wait');
  t.equal(f.heldP50, 10);
  // A whole summarizer call inside a hold is a forced summary, however short.
  const forced = upstreamRecords(requests.slice(2, 3), relay, [{ start: 3_002, end: 3_008, promptChars: 0, outputChars: 0 }]);
  t.equal(forced[0]?.summarizerInside, true);
  t.same(figuresOf(forced, [], [], 1e6).waitedOnSummarizer, [2]);
});

t.test('bypassReason and quantile', async (t) => {
  t.equal(bypassReason('bypass; reason=budget'), 'budget');
  t.equal(bypassReason('bypass'), 'unspecified');
  t.equal(bypassReason('reduced'), undefined);
  t.equal(bypassReason(undefined), undefined);
  t.equal(quantile([], 0.5), undefined);
  t.equal(quantile([3, 1, 2], 0.5), 2);
  t.equal(quantile([1, 2, 3, 4, 100], 0.99), 100);
});

t.test('buildKnows: a configuration name declared in the build, not one it merely starts', async (t) => {
  const dist = mkdtempSync(join(tmpdir(), 'compactor-build-'));
  t.teardown(() => rmSync(dist, { recursive: true, force: true }));
  writeFileSync(join(dist, 'config.js'), 'const Schema = z.object({\n    COMPACTOR_SUMMARIZER_MODEL: z.string(),\n});\n');
  t.equal(buildKnows(dist, 'COMPACTOR_SUMMARIZER_MODEL'), true);
  t.equal(buildKnows(dist, 'COMPACTOR_SUMMARIZER_MODE'), false);
  t.equal(buildKnows(dist, 'COMPACTOR_DEFAULT_CONTEXT_WINDOW'), false);
  t.equal(buildKnows(`${dist}/none`, 'COMPACTOR_SUMMARIZER_MODEL'), false);
});
