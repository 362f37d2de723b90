import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateHistory, prng } from './lib/generate.mjs';
import { runMeta } from './lib/meta.mjs';
import { startProber } from './lib/prober.mjs';
import { peakRssMiB, startServer } from './lib/servers.mjs';

const FILTER = process.argv[2] ?? '';
/**
 * MEMORY_WARM=1: before each case, the server's caches are filled as a long-lived server's are
 * (`warmCaches`), and its peak RSS is reset (`/proc/<pid>/clear_refs`) so the case's peak is its own.
 */
const WARM = process.env.MEMORY_WARM === '1';

/** Tiny messages in each format: the shape whose parsed size dwarfs its bytes. */
const tinyMessage = {
  openai: (i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' }),
  anthropic: (i) => ({ role: i % 2 ? 'assistant' : 'user', content: [{ type: 'text', text: 'x' }] }),
  gemini: (i) => ({ role: i % 2 ? 'model' : 'user', parts: [{ text: 'x' }] }),
  responses: (i) => ({ type: 'message', role: i % 2 ? 'assistant' : 'user', content: 'x' }),
};
const formatName = { openai: 'openai-chat', anthropic: 'anthropic', gemini: 'gemini', responses: 'openai-responses' };

function tiny(format, count) {
  const messages = Array.from({ length: count }, (_, i) => tinyMessage[format](i));
  return JSON.stringify({ messages, format: formatName[format] });
}

/** One user message holding `bytes` of text (ASCII or CJK), then an answer. */
function huge(bytes, cjk = false) {
  const unit = cjk ? '日本語のテキスト' : 'line of tool output ';
  const text = unit.repeat(Math.floor(bytes / Buffer.byteLength(unit)));
  return JSON.stringify({
    messages: [
      { role: 'user', content: text },
      { role: 'assistant', content: 'ok' },
    ],
  });
}

/** Tool calls whose arguments nest to about 120 levels in all (the limit is 128), as many as fit in `bytes`. */
function deep(bytes) {
  let args = { v: 1 };
  // The body nests 7 levels before `arguments` (body, messages, message, tool_calls, call, function):
  // 55 more pairs of levels stay under MAX_DEPTH (128).
  for (let d = 0; d < 55; d++) args = { a: [args] };
  const one = JSON.stringify(args);
  const messages = [{ role: 'user', content: 'go' }];
  for (let i = 0, length = 0; length < bytes; i++) {
    const call = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'f', arguments: args } }],
    };
    const result = { role: 'tool', tool_call_id: `c${i}`, content: one.slice(0, 40) };
    messages.push(call, result);
    length += JSON.stringify(call).length + JSON.stringify(result).length + 2;
  }
  return JSON.stringify({ messages });
}

/** One Anthropic message of many small content parts (few messages, many objects). */
function parts(count) {
  const content = Array.from({ length: count }, () => ({ type: 'text', text: 'x' }));
  return JSON.stringify({ messages: [{ role: 'user', content }], format: 'anthropic' });
}

/** `bytes` of varied words (seeded), so that no two tool calls read alike. */
function prose(random, bytes) {
  const words = ['read', 'file', 'src/app.ts', 'grep', '-n', 'config', 'line', '42', 'test', 'fix', 'run', 'build'];
  let out = '';
  while (out.length < bytes) out += `${words[Math.floor(random() * words.length)]}${Math.floor(random() * 1000)} `;
  return out.slice(0, bytes);
}

/**
 * One assistant message of `count` tool calls (arguments of about `argBytes`), each answered by a
 * tool message: few messages in the shape of the body's top array, most objects inside one message.
 */
function toolCalls(count, argBytes, format = 'openai') {
  const random = prng(7);
  if (format === 'gemini') {
    const calls = Array.from({ length: count }, () => ({
      functionCall: { name: 'bash', args: { command: prose(random, argBytes) } },
    }));
    const results = Array.from({ length: count }, () => ({ functionResponse: { name: 'bash', response: { output: 'ok' } } }));
    const contents = [
      { role: 'user', parts: [{ text: 'go' }] },
      { role: 'model', parts: calls },
      { role: 'user', parts: results },
    ];
    return JSON.stringify({ messages: contents, format: 'gemini' });
  }
  const args = () => JSON.stringify({ command: prose(random, Math.max(1, argBytes - 16)) });
  if (format === 'anthropic') {
    const uses = Array.from({ length: count }, (_, i) => ({
      type: 'tool_use',
      id: `t${i}`,
      name: 'bash',
      input: JSON.parse(args()),
    }));
    const results = Array.from({ length: count }, (_, i) => ({ type: 'tool_result', tool_use_id: `t${i}`, content: 'ok' }));
    const messages = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: uses },
      { role: 'user', content: results },
    ];
    return JSON.stringify({ messages, format: 'anthropic' });
  }
  const calls = Array.from({ length: count }, (_, i) => ({
    id: `c${i}`,
    type: 'function',
    function: { name: 'bash', arguments: args() },
  }));
  const messages = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: null, tool_calls: calls },
    ...Array.from({ length: count }, (_, i) => ({ role: 'tool', tool_call_id: `c${i}`, content: 'ok' })),
  ];
  return JSON.stringify({ messages });
}

/** A realistic generated agent history of about `bytes`. */
function realistic(bytes) {
  const base = generateHistory({ pairs: 999, scale: 0.455 });
  const out = [...base];
  for (let r = 1; JSON.stringify(out).length < bytes; r++) {
    for (const m of base.slice(2)) out.push(JSON.parse(JSON.stringify(m).replaceAll('"call_', `"c${r}_`)));
  }
  for (let length = JSON.stringify(out).length; length > bytes; ) {
    length -= out.splice(out.length - 2, 2).reduce((sum, m) => sum + JSON.stringify(m).length + 1, 0);
  }
  return JSON.stringify({ messages: out, model: 'gpt-4o' });
}

const withOptions = (body, endpoint) => {
  const extra = { window: { keep: { messages: 2 } }, compact: { keep_tool_uses: 1 }, fit: { target_tokens: 8000 } }[endpoint];
  return `${body.slice(0, -1)},${JSON.stringify(extra).slice(1)}`;
};

/** Each case: requests sent at once to one fresh server. */
const CASES = [
  { name: 'baseline: started, idle', requests: [] },
  { name: '1,000,000 tiny messages (31 MB): refused', requests: [['window', () => tiny('openai', 1_000_000)]] },
  { name: '100,000 tiny messages (the cap), window', requests: [['window', () => tiny('openai', 100_000)]] },
  { name: '100,000 tiny messages (the cap), fit', requests: [['fit', () => tiny('openai', 100_000)]] },
  { name: '100,000 tiny messages (the cap), compact', requests: [['compact', () => tiny('openai', 100_000)]] },
  ...['anthropic', 'gemini', 'responses'].map((f) => ({
    name: `100,000 tiny messages, ${f}, fit`,
    requests: [['fit', () => tiny(f, 100_000)]],
  })),
  { name: 'one 31.5 MB ASCII string, fit', requests: [['fit', () => huge(31.5e6)]] },
  { name: 'one 31.5 MB CJK string, fit', requests: [['fit', () => huge(31.5e6, true)]] },
  { name: 'one 31.5 MB ASCII string, compact', requests: [['compact', () => huge(31.5e6)]] },
  { name: 'one 31.5 MB ASCII string, fit, chunked', chunked: true, requests: [['fit', () => huge(31.5e6)]] },
  { name: '100,000 tiny messages, fit, chunked', chunked: true, requests: [['fit', () => tiny('openai', 100_000)]] },
  { name: '8,000 tiny messages (250 kB), window', requests: [['window', () => tiny('openai', 8000)]] },
  { name: 'nesting 120 deep, 31 MB, fit', requests: [['fit', () => deep(31e6)]] },
  { name: 'one message of 1,000,000 parts (26 MB)', requests: [['fit', () => parts(1_000_000)]] },
  { name: '90,000 tool calls in one message (31 MB), fit', requests: [['fit', () => toolCalls(90_000, 215)]] },
  { name: '90,000 tool calls in one message (31 MB), compact', requests: [['compact', () => toolCalls(90_000, 215)]] },
  {
    name: '90,000 function calls in one message (31 MB), gemini, fit',
    requests: [['fit', () => toolCalls(90_000, 250, 'gemini')]],
  },
  { name: '30,000 tool calls in one message (31 MB), fit', requests: [['fit', () => toolCalls(30_000, 930)]] },
  {
    name: 'mix at the limit: 3 × 45,000 tool uses (16 MB), anthropic, fit',
    requests: Array.from({ length: 3 }, () => ['fit', () => toolCalls(45_000, 240, 'anthropic')]),
  },
  {
    name: 'mix at the limit: 2 × 45,000 tool calls (15 MB) + 31.5 MB string, fit',
    requests: [...Array.from({ length: 2 }, () => ['fit', () => toolCalls(45_000, 215)]), ['fit', () => huge(31.5e6)]],
  },
  {
    name: '90,000 tool uses in one message (31 MB), anthropic, fit',
    requests: [['fit', () => toolCalls(90_000, 240, 'anthropic')]],
  },
  { name: 'realistic 31.5 MB history, fit', requests: [['fit', () => realistic(31.5e6)]] },
  {
    name: 'mix at the limit: 2 × 31.5 MB string + 3 × 30,000 tiny messages, fit',
    requests: [
      ...Array.from({ length: 2 }, () => ['fit', () => huge(31.5e6)]),
      ...Array.from({ length: 3 }, () => ['fit', () => tiny('openai', 30_000)]),
    ],
  },
  {
    name: 'mix at the limit: 8 × 12,000 tiny messages + 4 × 8 MB history, fit and compact',
    requests: [
      ...Array.from({ length: 8 }, (_, i) => [i % 2 ? 'fit' : 'compact', () => tiny('openai', 12_000)]),
      ...Array.from({ length: 4 }, (_, i) => [i % 2 ? 'fit' : 'compact', () => realistic(8e6)]),
    ],
  },
  {
    name: 'mix at the limit: 20 × 100,000 tiny messages, window',
    requests: Array.from({ length: 20 }, () => ['window', () => tiny('openai', 100_000)]),
  },
];

/** A body sent in 64 KiB chunks without a content-length. */
function chunked(body) {
  const bytes = Buffer.from(body);
  return new ReadableStream({
    start(controller) {
      for (let i = 0; i < bytes.length; i += 65_536) controller.enqueue(bytes.subarray(i, i + 65_536));
      controller.close();
    },
  });
}

/**
 * The server's own largest event-loop delay (ms) since the last scrape (prom-client's
 * `nodejs_eventloop_lag_max_seconds`, reset by each scrape): unlike the prober's latency, it does
 * not count the prober's or this process's own waits for a core on a busy machine.
 */
async function loopDelayMs(base) {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1]) * 1000;
}

/**
 * Fills the caches a long-lived server holds (issue 39 #10): 200,000 distinct messages counted on
 * the main thread (100 bodies of 2,000, under the worker threshold) and as many on the worker (10
 * bodies of 20,000), each message of distinct words (the tokenizer's merges too).
 */
async function warmCaches(base) {
  const body = (from, n) =>
    JSON.stringify({
      format: 'openai-chat',
      model: 'gpt-4o',
      messages: Array.from({ length: n }, (_, i) => ({
        role: 'user',
        content: `message ${from + i}: zq${((from + i) * 7919).toString(36)}vk ${'the text of it '.repeat(6)}`,
      })),
    });
  for (let r = 0; r < 100; r++)
    await (
      await fetch(`${base}/v1/tokens`, {
        method: 'POST',
        body: body(r * 2000, 2000),
        headers: { 'content-type': 'application/json' },
      })
    ).arrayBuffer();
  for (let r = 0; r < 10; r++)
    await (
      await fetch(`${base}/v1/tokens`, {
        method: 'POST',
        body: body(1e6 + r * 20_000, 20_000),
        headers: { 'content-type': 'application/json' },
      })
    ).arrayBuffer();
}

const rssMiB = (pid) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

async function runCase(c) {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-memory-'));
  const server = await startServer('compactor', {
    env: { COMPACTOR_STORE_URL: `sqlite:${join(dir, 'c.db')}`, LOG_LEVEL: 'warn' },
  });
  try {
    // Ready: the worker pool is up (its thread and tokenizer count in the baseline).
    for (let i = 0; i < 600 && (await fetch(`${server.base}/health/ready`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 100));
    if (WARM) {
      await warmCaches(server.base);
      writeFileSync(`/proc/${server.pid}/clear_refs`, '5');
    }
    const idle = rssMiB(server.pid);
    const bodies = c.requests.map(([endpoint, make]) => [endpoint, withOptions(make(), endpoint)]);
    const bytes = bodies.reduce((sum, [, b]) => sum + Buffer.byteLength(b), 0);
    await loopDelayMs(server.base);
    const prober = startProber(server.base);
    await new Promise((r) => setTimeout(r, 200));
    const answers = await Promise.all(
      bodies.map(async ([endpoint, body]) => {
        const res = await fetch(`${server.base}/v1/${endpoint}`, {
          method: 'POST',
          body: c.chunked ? chunked(body) : body,
          headers: { 'content-type': 'application/json' },
          duplex: 'half',
        });
        const text = await res.text();
        return res.status === 200 ? '200' : `${res.status} ${/"code":"(\w+)"/.exec(text)?.[1] ?? ''}`;
      }),
    );
    const counts = {};
    for (const a of answers) counts[a] = (counts[a] ?? 0) + 1;
    const statuses = Object.entries(counts).map(([s, n]) => (n > 1 ? `${n} × ${s}` : s));
    const lat = (await prober.stop()).sort((a, b) => a - b);
    const live = { p99: lat[Math.floor(0.99 * (lat.length - 1))] ?? Number.NaN, max: lat.at(-1) ?? Number.NaN };
    live.loop = await loopDelayMs(server.base);
    return { idle, peak: peakRssMiB(server.pid), bytes, statuses: statuses.join(', ') || '—', live };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `# peak RSS of the server under the worst request shapes${WARM ? ', caches warmed first' : ''} ${JSON.stringify(runMeta())}\n`,
);
console.log(
  '| case | body MB (sum) | answers | RSS idle MiB | peak RSS MiB | /health/live p99 ms | max ms | event-loop delay max ms |',
);
console.log('|---|---:|---|---:|---:|---:|---:|---:|');
let worst = 0;
for (const c of CASES.filter((x) => x.name.includes(FILTER))) {
  const r = await runCase(c);
  worst = Math.max(worst, r.peak);
  const live = `${r.live.p99.toFixed(0)} | ${r.live.max.toFixed(0)} | ${r.live.loop.toFixed(0)}`;
  console.log(
    `| ${c.name} | ${(r.bytes / 1e6).toFixed(1)} | ${r.statuses} | ${r.idle.toFixed(0)} | ${r.peak.toFixed(0)} | ${live} |`,
  );
}
console.log(`\nworst peak: ${worst.toFixed(0)} MiB (${(worst / 1024).toFixed(2)} GiB)`);
