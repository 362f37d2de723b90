// A client that keeps its whole history (issue 40): the growing conversation of
// bench/incremental.mjs (django-16560, 100 `/v1/fit` calls, each the previous history plus one
// step), sent whole every call, none of fit's answers adopted, with prepared summaries on (the
// fake summarizer of bench/lib/fake-llm.mjs over real HTTP, 20 ms) and SQLite. Prints how the
// calls were answered, the summarizer calls, the answers' sizes summed and the part of each
// answer outside the longest prefix it shares with the previous one (what a provider's prompt
// cache would not hold), summed.
// Run: npm run build && node bench/whole-history.mjs [target_tokens=12000]
import { readFileSync, rmSync } from 'node:fs';
import { CORPUS_DIR } from './lib/corpus.mjs';
import { startFakeLlm } from './lib/fake-llm.mjs';
import { startServer } from './lib/servers.mjs';

const TARGET = Number(process.argv[2] ?? 12_000);
const messages = JSON.parse(
  readFileSync(`${CORPUS_DIR}/openai/mini-swe-agent-gemini-3-pro__django__django-16560.json`, 'utf8'),
).messages;
const ENDS = Array.from({ length: 100 }, (_, i) => messages.length - 2 * (99 - i));
const DB = `/tmp/compactor-whole-history-${process.pid}.db`;
const llm = await startFakeLlm({ delayMs: 20 });
const server = await startServer('compactor', {
  env: {
    LOG_LEVEL: 'warn',
    COMPACTOR_STORE_URL: `sqlite:${DB}`,
    OPENAI_BASE_URL: llm.url,
    COMPACTOR_SUMMARIZER_MODEL: 'fake-small',
    COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
    COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
  },
});
const answered = {};
let previous = null;
let sent = 0;
let outside = 0;
for (const end of ENDS) {
  const res = await fetch(`${server.base}/v1/fit`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: messages.slice(0, end), target_tokens: TARGET, model: 'gpt-4o' }),
  });
  const r = await res.json();
  if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(r).slice(0, 300)}`);
  const how = r.applied ? (r.prepared?.state === 'spliced' ? 'spliced' : 'applied') : r.reason;
  answered[how] = (answered[how] ?? 0) + 1;
  const out = r.messages.map((m) => JSON.stringify(m));
  let shared = 0;
  while (previous && shared < previous.length && shared < out.length && previous[shared] === out[shared]) shared++;
  for (let i = 0; i < out.length; i++) {
    sent += out[i].length;
    if (i >= shared) outside += out[i].length;
  }
  previous = out;
}
console.log(
  `answers ${JSON.stringify(answered)}; summarizer calls ${llm.requests.length}; sent ${(sent / 1e6).toFixed(1)} MB, outside the previous answer's prefix ${(outside / 1e6).toFixed(1)} MB`,
);
await server.stop();
await llm.stop();
for (const suffix of ['', '-wal', '-shm']) rmSync(`${DB}${suffix}`, { force: true });
