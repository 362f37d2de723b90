/**
 * Where a /v1/window request's time goes, stage by stage, in process (diagnostic; not part of
 * `npm run bench`). Each stage is timed on its own, with the median of BENCH_REPS (default 15)
 * repetitions, on the same two inputs as bench/window.mjs. Stages follow what the server does
 * for one request; "floor" stages are what the floor server does.
 *
 * Imports compiled internals from ../dist (formats, counter, schemas): if src/ is restructured,
 * adjust the imports.
 *
 * Usage: npm run build && node --expose-gc bench/breakdown.mjs
 */
import { createHash, hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import sjson from 'secure-json-parse';
import { detectFormat } from '../dist/formats/detect.js';
import { checkDepth } from '../dist/history/limits.js';
import { Compactor, TokenCounter, windowStrategy } from '../dist/index.js';
import { STRATEGY_SCHEMAS } from '../dist/schemas/strategies.js';
import { countText } from '../dist/tokens/encoders.js';
import { resolveModel } from '../dist/tokens/models.js';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { generateHistory, nextAssistantMessage } from './lib/generate.mjs';
import { fmt, median } from './lib/stats.mjs';

const REPS = Number(process.env.BENCH_REPS ?? 15);
const CORPUS_FILE = `${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__psf__requests-1142.json`;
const gc = typeof globalThis.gc === 'function' ? () => globalThis.gc() : () => {};
const AS_TEXT = { disallowedSpecial: new Set() };

const inputs = [
  { name: 'corpus', messages: JSON.parse(readFileSync(CORPUS_FILE, 'utf8')).messages, keep: { messages: 50 } },
  { name: 'generated', messages: generateHistory({ seed: 42 }), keep: { messages: 200 } },
];

function time(fn) {
  fn();
  fn();
  const xs = [];
  for (let i = 0; i < REPS; i++) {
    gc();
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

/** Like time(), with an untimed setup before each call whose result the call receives. */
function timeWith(setup, fn) {
  fn(setup());
  const xs = [];
  for (let i = 0; i < REPS; i++) {
    const state = setup();
    gc();
    const t0 = performance.now();
    fn(state);
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

async function timeAsync(fn) {
  await fn();
  const xs = [];
  for (let i = 0; i < REPS; i++) {
    gc();
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

const validate = validatorCompiler({ schema: STRATEGY_SCHEMAS.window.request, method: 'POST', url: '/v1/window' });
const serialize = serializerCompiler({ schema: STRATEGY_SCHEMAS.window.response, method: 'POST', url: '/v1/window' });
const profile = resolveModel('gpt-4o');
const parseBody = (text) => sjson.parse(text, null, { protoAction: 'error', constructorAction: 'error' });

for (const input of inputs) {
  const messages = [...input.messages, nextAssistantMessage(7)];
  const bodyText = JSON.stringify({ messages, model: 'gpt-4o', keep: input.keep });
  const body = parseBody(bodyText);
  const request = validate(body).value;
  const format = detectFormat(messages);
  const compactor = new Compactor(new TokenCounter(200_000));
  const { extra, ...result } = await compactor.run(windowStrategy, request, request);
  const response = { ...result, ...extra };
  const texts = messages.map((m) => format.countable(m).text);
  const allText = texts.join('');

  const rows = [
    ['floor+ours: secure-json-parse of the body (the app and Fastify both)', time(() => parseBody(bodyText))],
    ['floor: JSON.stringify of the whole body (its response)', time(() => JSON.stringify(body))],
    ['ours: zod request validation (WindowRequest)', time(() => validate(body))],
    [
      'ours: compactor.run, warm count cache (everything below)',
      await timeAsync(() => compactor.run(windowStrategy, request, request)),
    ],
    ['  detectFormat', time(() => detectFormat(messages))],
    ['  format.parse', time(() => format.parse(messages))],
    ['  format.violations(parse)', time(() => format.violations(format.parse(messages).items))],
    ['  depth guard: checkDepth of every message', time(() => messages.map((m, i) => checkDepth(m, `messages[${i}]`)))],
    ['  cache keys: format.countable of every message', time(() => messages.map((m) => format.countable(m)))],
    ['  cache keys: sha1 of every counted text', time(() => texts.map((t) => hash('sha1', t, 'base64')))],
    ['  (for scale) one sha1 over all counted text', time(() => createHash('sha1').update(allText).digest('base64'))],
    ['  checkOutput: parse + violations of the output', time(() => format.violations(format.parse(result.messages).items))],
    ['ours: response zod encode + JSON.stringify', time(() => serialize(response))],
    ['cold only: format.countable of every message', time(() => messages.map((m) => format.countable(m)))],
    ['cold only: countTokens of every message text', time(() => texts.map((t) => (t ? countTokens(t, AS_TEXT) : 0)))],
    ["cold only: the counter's countText of every message text", time(() => texts.map((t) => countText(profile, t)))],
    ['(for scale) countTokens of all message texts joined', time(() => countTokens(texts.join('\n'), AS_TEXT))],
    [
      'cold: compactor.tokens, fresh count cache',
      timeWith(
        () => new Compactor(new TokenCounter(200_000)),
        (c) => c.tokens(request),
      ),
    ],
    [
      'cold: compactor.tokens, no count cache',
      timeWith(
        () => new Compactor(new TokenCounter(0)),
        (c) => c.tokens(request),
      ),
    ],
  ];
  console.log(
    `\n${input.name}: ${messages.length} messages, ${(bodyText.length / 2 ** 20).toFixed(2)} MiB body, keep ${JSON.stringify(input.keep)}; response ${(serialize(response).length / 2 ** 20).toFixed(2)} MiB`,
  );
  for (const [label, ms] of rows) console.log(`  ${label.padEnd(72)} ${fmt(ms, 2).padStart(8)} ms`);
}
