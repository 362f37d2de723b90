/**
 * A fake OpenAI-compatible summarizer for the summarization benchmark: real HTTP on 127.0.0.1 (a
 * free port), `POST /v1/chat/completions` (non-streaming), usage counted with gpt-tokenizer's
 * o200k_base `countTokens` over the prompt messages' contents and over the reply, a configurable
 * reply delay, and a reply that is a plausible structured summary of about 300–600 tokens derived
 * deterministically from its input (the same prompt always gets the same reply). Every request is
 * recorded: prompt and completion tokens, what kind of call it was, and when the server started and
 * finished handling it (so that a client can subtract the fake's time from its own), who called
 * (the bearer key it sent), a hash of its prompt, and whether the answer reached the caller.
 *
 * In-process: `const fake = await startFakeLlm({ delayMs })` → `fake.url` (ends in /v1),
 * `fake.requests`, `fake.setDelay(ms)`, `fake.stop()`. `fakeReply(messages)` is the reply generator
 * alone (the benchmark uses it to size the replies of calls it only simulates).
 * Standalone: `node bench/lib/fake-llm.mjs [delayMs]` prints its base URL and serves until killed.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';

const NO_SPECIAL = { disallowedSpecial: new Set() };
/** o200k_base tokens of a text, special-token look-alikes counted as text. */
export const countTokens = (text) => (text ? o200k(text, NO_SPECIAL) : 0);

/** Prompt tokens as the fake bills them: the sum over the messages' contents. */
export function promptTokens(messages) {
  let n = 0;
  for (const m of messages) n += countTokens(typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
  return n;
}

const MIN_REPLY = 300;
const MAX_REPLY = 600;

const unescapeXml = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const words = (s, n) => {
  const w = s.replace(/\s+/g, ' ').trim().split(' ');
  return w.length <= n ? w.join(' ') : `${w.slice(0, n).join(' ')} …`;
};
const firstLine = (s) =>
  s
    .split('\n')
    .map((l) => l.trim())
    .find((l) => l.length > 0 && !/^<\/?(returncode|output)>/.test(l)) ?? '';

/** Identifiers a summarizer would copy: paths, file names, error names, constants, ids, numbers with units, `code`. */
const IDENT = [
  /\bhttps?:\/\/[^\s"'<>()\][]+/g,
  /(?:\.{0,2}\/)?(?:[\w@.-]+\/)+[\w@.-]+\.[A-Za-z0-9]{1,8}\b/g,
  /\b[\w-]+\.(?:py|ts|js|mjs|json|ya?ml|toml|md|rs|go|java|rb|c|h|cpp|sh|sql|html|css|txt|cfg|ini|rst|jsonl)\b/g,
  /\b[A-Z][A-Za-z]*(?:Error|Exception)\b/g,
  /\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b/g,
  /\b(?:call|toolu|msg|fc|req|run|art)_[A-Za-z0-9]{6,}\b/g,
  /\b\d+(?:\.\d+)?\s?(?:ms|s|KB|MB|GB|%|tokens)(?![A-Za-z])/g,
  /`[^`\n]{3,60}`/g,
  /\b[a-z_][a-z0-9_]{3,}\(\)/g,
];

function identifiers(text) {
  const seen = new Map();
  let order = 0;
  for (const re of IDENT) {
    for (const m of text.matchAll(re)) {
      const id = m[0].replace(/^`|`$/g, '').replace(/[.,;:]+$/, '');
      if (id.length < 3 || id.length > 120) continue;
      const e = seen.get(id);
      if (e) e.count++;
      else seen.set(id, { first: order++, count: 1 });
    }
  }
  return [...seen.entries()].sort((a, b) => b[1].count - a[1].count || a[1].first - b[1].first).map(([id]) => id);
}

/** The transcript's elements: role, tool name and status, body. */
function elements(transcript) {
  const out = [];
  const re = /<(user|assistant|system|tool)(?: name="([^"]*)" status="(ok|error)")?>\n([\s\S]*?)\n<\/\1>/g;
  for (const m of transcript.matchAll(re))
    out.push({ role: m[1], tool: m[2] ?? null, error: m[3] === 'error', body: unescapeXml(m[4]) });
  return out;
}

/** Sections of an earlier summary (or of partial summaries), by heading. */
function sections(summary) {
  const out = {};
  let current = null;
  for (const line of summary.split('\n')) {
    const h = /^## (.+)$/.exec(line);
    if (h) {
      current = h[1].trim();
      out[current] = [];
    } else if (/^Key references:$/.test(line)) current = 'Key references';
    else if (current && line.trim()) {
      if (!out[current]) out[current] = [];
      out[current].push(line.trim());
    }
  }
  return out;
}

/** A deterministic PRNG seeded from the prompt. */
function seeded(text) {
  const digest = createHash('sha256').update(text).digest();
  let a = digest.readUInt32LE(0);
  return {
    target: MIN_REPLY + (digest.readUInt32LE(4) % (MAX_REPLY - MIN_REPLY + 1)),
    next() {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

/** What kind of call a prompt is: a first summary, a fold, a chunk or a merge. */
export function callKind(user) {
  if (/<partial_summary part="/.test(user)) return 'merge';
  if (/^This is part \d+ of \d+/.test(user)) return 'chunk';
  if (user.includes('<previous_summary>')) return 'fold';
  return 'summary';
}

/**
 * The reply to a summarizer prompt: Markdown with the six sections the prompt asks for, filled
 * from the input (the earlier summary's bullets carried over, the user's requests, the assistant's
 * stated decisions, the tool calls, the errors, the identifiers), cut to a length between 300 and
 * 600 o200k tokens chosen by a hash of the prompt.
 */
export function fakeReply(messages) {
  const user = String(messages.find((m) => m.role === 'user')?.content ?? '');
  const rng = seeded(messages.map((m) => `${m.role}\n${m.content}`).join('\n\0'));
  const kind = callKind(user);
  const previous = /<previous_summary>\n([\s\S]*?)\n<\/previous_summary>/.exec(user)?.[1] ?? '';
  const transcript = /<transcript>\n([\s\S]*?)\n<\/transcript>/.exec(user)?.[1] ?? '';
  const partials = [...user.matchAll(/<partial_summary part="\d+">\n([\s\S]*?)\n<\/partial_summary>/g)].map((m) => m[1]);
  const earlier = [previous, ...partials].filter(Boolean).map(sections);
  const els = elements(transcript);
  const ids = identifiers(unescapeXml(transcript) + partials.join('\n'));

  const carried = (name) => earlier.flatMap((s) => s[name] ?? []).filter((l) => l.startsWith('- '));
  const users = els.filter((e) => e.role === 'user').map((e) => `- ${words(e.body, 40)}`);
  const decisions = els
    .filter((e) => e.role === 'assistant')
    .flatMap((e) => e.body.split(/(?<=[.!?])\s+|\n/))
    .filter((s) => /\b(I'll|I will|I need|Let me|should|instead|because|decide|plan|fix)\b/i.test(s) && !s.startsWith('[call'))
    .map((s) => `- ${words(s.replace(/^THOUGHT:\s*/, ''), 28)}`);
  const calls = new Map();
  for (const e of els) {
    for (const m of e.body.matchAll(/^\[call (\S+) (.*)\]$/gm)) {
      const key = `${m[1]} ${words(m[2], 14)}`;
      calls.set(key, (calls.get(key) ?? 0) + 1);
    }
  }
  const done = [...calls.entries()].map(([c, n]) => `- Ran \`${c}\`${n > 1 ? ` (${n} times)` : ''}.`);
  const found = els
    .filter((e) => e.role === 'tool' && !e.error)
    .map((e) => firstLine(e.body))
    .filter((l) => l.length > 8)
    .map((l) => `- ${e2(l)}`);
  const failed = els
    .filter((e) => e.role === 'tool' && (e.error || /Traceback|Error|FAILED|failed|No such file/.test(e.body)))
    .map(
      (e) =>
        `- \`${e.tool ?? 'tool'}\`: ${words(firstLine(e.body.split('\n').find((l) => /Error|FAILED|failed|No such/.test(l)) ?? e.body), 24)}`,
    );
  const lastAssistant = [...els].reverse().find((e) => e.role === 'assistant' && e.body.trim() && !e.body.startsWith('[call'));
  const idBullets = ids.map((id) => `- \`${id}\``);

  const goal = carried('Goal and constraints');
  const plan = [
    ['Goal and constraints', goal.length ? goal.slice(0, 4) : users.slice(0, 2), ['- Continue the task the user gave.']],
    ['Decisions', [...carried('Decisions').slice(-4), ...pick(decisions, 4, rng)], ['- No new decisions in this part.']],
    [
      'Done and found',
      [...carried('Done and found').slice(-8), ...done.slice(-6), ...pick(found, 4, rng), ...idBullets.slice(0, 10)],
      [],
    ],
    ['Failed attempts', [...carried('Failed attempts').slice(-3), ...failed.slice(-3)], ['- None recorded.']],
    [
      'Current state',
      [lastAssistant ? `- ${words(lastAssistant.body.replace(/^THOUGHT:\s*/, ''), 45)}` : '- Work in progress.'],
      [],
    ],
    [
      'Remaining work',
      [...carried('Remaining work').slice(-2), ...users.slice(-1).map((u) => u.replace(/^- /, '- Answer: '))],
      ['- Finish and verify the change.'],
    ],
  ];
  // Filler, in order, when the sections above are shorter than the target: more identifiers, more results.
  const extra = [...idBullets.slice(10), ...found, ...decisions, ...done];

  const target = rng.target;
  let used = 0;
  const body = plan.map(([name, items, fallback]) => ({ name, items: items.length ? items : fallback }));
  // Round-robin over the sections so a long section cannot crowd out the later ones.
  const queues = body.map((s) => [...new Set(s.items)]);
  const out = body.map(() => []);
  let progress = true;
  while (progress && used < target) {
    progress = false;
    for (let i = 0; i < queues.length && used < target; i++) {
      const next = queues[i].shift();
      if (next === undefined) continue;
      const cost = countTokens(next) + 1;
      if (used + cost > target && used >= MIN_REPLY) continue;
      out[i].push(next);
      used += cost;
      progress = true;
    }
  }
  for (const line of extra) {
    if (used >= target) break;
    if (out[2].includes(line)) continue;
    const cost = countTokens(line) + 1;
    if (used + cost > target) continue;
    out[2].push(line);
    used += cost;
  }
  let text = body.map((s, i) => [`## ${s.name}`, ...(out[i].length ? out[i] : ['- None.'])].join('\n')).join('\n');
  // A tiny input cannot fill 300 tokens with its own content: say so, as a model would pad.
  for (let k = 0; countTokens(text) < MIN_REPLY && k < 40; k++) {
    text += `\n- (${kind}) Nothing further to record from item ${k + 1} of ${els.length || partials.length || 1}; identifiers above are exact.`;
  }
  return text;
}

/** Picks up to n items, spread over the list, deterministically. */
function pick(items, n, rng) {
  if (items.length <= n) return items;
  const out = [];
  const step = items.length / n;
  for (let i = 0; i < n; i++) out.push(items[Math.min(items.length - 1, Math.floor(i * step + rng.next() * step))]);
  return out;
}

const e2 = (line) => words(line, 22);

/**
 * The environment that points a child service (`node dist/server.js`) at a fake summarizer with
 * no retry, its API keys and a fixed artifact secret (artifact ids, named in placeholders and
 * summaries, are then the same on every run). `apiKey` is the key the service sends the fake:
 * each record's `caller` (tells replicas apart).
 */
export function summarizerEnv(fake, { keys, secret, apiKey = 'x' }) {
  return {
    LOG_LEVEL: 'warn',
    OPENAI_BASE_URL: fake.url,
    OPENAI_API_KEY: apiKey,
    COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
    COMPACTOR_SUMMARIZER_TIMEOUT_MS: '30000',
    COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
    COMPACTOR_API_KEYS: keys.join(','),
    COMPACTOR_ARTIFACT_SECRET: secret,
  };
}

/**
 * Starts the fake server.
 * @param {{ delayMs?: number, keepPrompts?: boolean }} [options] keepPrompts: also record each
 *   request's messages (`record.messages`)
 */
export async function startFakeLlm({ delayMs = 0, keepPrompts = false } = {}) {
  const requests = [];
  let delay = delayMs;
  const server = createServer((req, res) => {
    const t0 = performance.now();
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"message":"bad json"}}');
        return;
      }
      const messages = Array.isArray(body.messages) ? body.messages : [];
      const content = fakeReply(messages);
      const usage = { prompt_tokens: promptTokens(messages), completion_tokens: countTokens(content) };
      const user = String(messages.find((m) => m.role === 'user')?.content ?? '');
      const record = {
        seq: requests.length,
        // The key the caller sent (a benchmark's dummy: which replica called) and the prompt's hash (which range).
        caller: /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1] ?? null,
        prompt_hash: createHash('sha256').update(JSON.stringify(messages)).digest('hex').slice(0, 16),
        model: body.model,
        max_tokens: body.max_tokens ?? null,
        kind: callKind(user),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        start: t0,
        end: Number.NaN,
        ms: Number.NaN,
        delivered: false,
        ...(keepPrompts ? { messages } : {}),
      };
      requests.push(record);
      // A caller that went away (killed) before the answer: the call ends there, not delivered.
      res.on('close', () => {
        if (record.delivered) return;
        record.end = performance.now();
        record.ms = record.end - record.start;
      });
      const answer = () => {
        if (res.destroyed) return;
        const json = JSON.stringify({
          id: `chatcmpl-fake-${record.seq}`,
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
          usage: {
            ...usage,
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
            prompt_tokens_details: { cached_tokens: 0 },
          },
        });
        res.on('finish', () => {
          record.delivered = true;
          record.end = performance.now();
          record.ms = record.end - record.start;
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end(json);
      };
      // The delay counts from the request's arrival, as a model's latency would.
      const wait = delay - (performance.now() - t0);
      if (wait > 0) setTimeout(answer, wait);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setDelay(ms) {
      delay = ms;
    },
    async stop() {
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const fake = await startFakeLlm({ delayMs: Number(process.argv[2] ?? 0) });
  console.log(fake.url);
}
