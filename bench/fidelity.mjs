/**
 * Fidelity benchmark: what survives a summary when the summarizer writes nothing useful.
 *
 * Each corpus transcript (/work/shared/corpus/real/{openai,anthropic}/*.json, and, when run with
 * the tsx loader, the Responses and Gemini conversions of test/support/convert.ts) is sent to the
 * real service over HTTP, `POST /v1/summarize` with `{keep: {messages: 10}, store: "none"}`. The
 * Compactor (`node dist/server.js`, store `memory:`) has an LLM summarizer pointing at a fake
 * OpenAI-compatible server on 127.0.0.1 that answers every call with the same prose naming
 * nothing: whatever survives, the service put there. Each transcript runs twice: with the
 * default `trail_tokens` (the artifact trail) and with `trail_tokens: 0` (the fact guard alone,
 * what the service did before the trail).
 *
 * Measured, with an extractor written here (not the service's): the summarized range (the
 * messages whose action is `summarize`) is read as JSON; every string in it is scanned for URLs
 * and paths (a `/` and a file name with an extension). Shares of them that appear verbatim in the
 * returned summary: all paths and URLs; those inside the agent's own tool calls' arguments; the
 * files the agent modified or created (write/edit tools' paths, shell redirections, `sed -i`,
 * `tee`, `touch`, SWE-agent `create`, apply_patch headers). Also the trail's size in o200k tokens.
 * Goals: 100% of files modified or created, >= 99% of tool-call identifiers, >= 95% median and
 * >= 80% minimum of all paths and URLs.
 *
 * Usage: npm run build && node --import tsx bench/fidelity.mjs
 *        (plain `node bench/fidelity.mjs` skips the converted transcripts)
 * Env: FIDELITY_KEEP (messages kept, default 10), FIDELITY_FILES (regex on the file name),
 *      FIDELITY_OUT (JSON path; default bench/out/fidelity-<commit>.json), BENCH_COMMIT.
 */

import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { countTokens } from './lib/fake-llm.mjs';
import { commit } from './lib/meta.mjs';
import { startServer } from './lib/servers.mjs';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CORPUS = process.env.COMPACTOR_CORPUS_DIR ?? `${ROOT}../shared/corpus/real`;
const KEEP = Number(process.env.FIDELITY_KEEP ?? 10);
const FILES = new RegExp(process.env.FIDELITY_FILES ?? '.');
const LOSSY = 'The agent investigated the task, ran several commands, changed some code and checked the results. Work continues.';
const HEADING = '## Artifact trail (compactor)';

/** A fake OpenAI-compatible server whose every summary names nothing. */
async function startLossyLlm() {
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        id: 'chatcmpl-lossy',
        object: 'chat.completion',
        created: 0,
        model: 'lossy',
        choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: LOSSY } }],
        usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
      }),
    );
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { url: `http://127.0.0.1:${server.address().port}/v1`, stop: () => new Promise((r) => server.close(r)) };
}

function transcripts() {
  const out = [];
  for (const dir of ['openai', 'anthropic']) {
    for (const name of readdirSync(`${CORPUS}/${dir}`).filter((f) => f.endsWith('.json'))) {
      const data = JSON.parse(readFileSync(`${CORPUS}/${dir}/${name}`, 'utf8'));
      out.push({ file: `${dir}/${name}`, body: { messages: data.messages, ...(data.tools ? { tools: data.tools } : {}) } });
    }
  }
  return out;
}

async function converted() {
  try {
    const { loadConverted } = await import('../test/support/convert.ts');
    return loadConverted().map((t) => ({
      file: t.file,
      body: { messages: t.messages, ...(t.system ? { system: t.system } : {}) },
    }));
  } catch {
    return [];
  }
}

// ---------------------------------------------------------------------------------------------
// The benchmark's own extractor (independent of src/)
// ---------------------------------------------------------------------------------------------

const URL_RE = /https?:\/\/[^\s"'<>()[\]`|\\]+/g;
const PATH_RE = /(?:~|\.{1,2})?\/?(?:[\w@+-][\w.@+-]*\/)+[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,8}(?![\w/.@+-])/g;
const trimPunct = (s) => s.replace(/[.,;:!?]+$/, '');

/** Paths and URLs of a string. */
function identifiers(text, into) {
  for (const m of text.matchAll(URL_RE)) into.add(trimPunct(m[0]));
  // A literal `\n` or `\t` (text escaped twice) separates words.
  const noUrls = text.replace(URL_RE, ' ').replace(/\\[ntr]/g, ' ');
  for (const m of noUrls.matchAll(PATH_RE)) {
    const p = trimPunct(m[0]);
    if (p.length <= 200 && !/^\d/.test(p)) into.add(p);
  }
}

/** Every string of a JSON value. */
function strings(value, each) {
  if (typeof value === 'string') each(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, each);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) strings(v, each);
}

/** The tool calls of one wire message, any format: [{name, args}] with args parsed. */
function toolCalls(m) {
  const out = [];
  const parse = (a) => {
    try {
      return typeof a === 'string' ? JSON.parse(a) : a;
    } catch {
      return a;
    }
  };
  for (const c of m.tool_calls ?? []) out.push({ name: c.function?.name, args: parse(c.function?.arguments) });
  if (m.type === 'function_call') out.push({ name: m.name, args: parse(m.arguments) });
  for (const b of Array.isArray(m.content) ? m.content : [])
    if (b?.type === 'tool_use') out.push({ name: b.name, args: b.input });
  for (const p of Array.isArray(m.parts) ? m.parts : [])
    if (p?.functionCall) out.push({ name: p.functionCall.name, args: p.functionCall.args });
  return out;
}

const WRITE_TOOLS = /^(write|edit|multiedit|notebookedit|write_file|edit_file|create_file|write_to_file|replace_in_file)$/i;

/** Files a call modified or created, read independently of the service. */
function written(call, into) {
  const a = call.args ?? {};
  const path = a.file_path ?? a.path ?? a.notebook_path;
  if (WRITE_TOOLS.test(call.name ?? '') && typeof path === 'string') into.add(path);
  if (/str_replace/.test(call.name ?? '') && a.command !== 'view' && typeof path === 'string') into.add(path);
  const cmd = typeof a.command === 'string' ? a.command : '';
  // Heredoc bodies are content, not commands.
  const lines = [];
  let delim = null;
  for (const line of cmd.split('\n')) {
    if (delim) {
      if (line.trim() === delim) delim = null;
      continue;
    }
    lines.push(line);
    const h = /<<-?\s*['"]?(\w+)['"]?/.exec(line);
    if (h) delim = h[1];
    // SWE-agent's `edit N:M` takes the lines up to `end_of_edit` as the replacement text.
    else if (/^\s*edit\s/.test(line)) delim = 'end_of_edit';
  }
  const script = lines.join('\n');
  const add = (p) => {
    if (/^[\w./~@+-]+$/.test(p) && /[./]/.test(p) && !p.startsWith('-') && !p.startsWith('/dev/')) into.add(p);
  };
  for (const m of script.matchAll(/(?:^|[^<>&\d])>>?\s*['"]?([^\s'";|&<>()]+)/g)) add(m[1]);
  for (const m of script.matchAll(/\bsed\s+-i\S*\s+(?:'[^']*'|"[^"]*"|\S+)\s+([^\s;|&]+)/g)) add(m[1]);
  for (const m of script.matchAll(/\b(?:tee(?:\s+-a)?|touch|^create)\s+([^\s;|&-][^\s;|&]*)/gm)) add(m[1]);
  for (const m of script.matchAll(/^\*\*\* (?:Add|Update) File: (.+)$/gm)) into.add(m[1].trim());
}

/** Of `items`, the share found in `text`, with the ones missed. */
function share(items, text) {
  const missed = [...items].filter((x) => !text.includes(x));
  return { n: items.size, kept: items.size - missed.length, share: items.size ? 1 - missed.length / items.size : 1, missed };
}

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

async function measure(base, t, trailTokens) {
  const body = {
    ...t.body,
    keep: { messages: KEEP },
    store: 'none',
    ...(trailTokens === undefined ? {} : { trail_tokens: trailTokens }),
  };
  const res = await fetch(`${base}/v1/summarize`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = await res.json();
  if (res.status !== 200) throw new Error(`${t.file}: HTTP ${res.status} ${JSON.stringify(out).slice(0, 300)}`);
  if (!out.applied) return { skipped: out.reason };
  const range = out.actions.filter((a) => a.action === 'summarize').map((a) => t.body.messages[a.index]);
  const all = new Set();
  const inCalls = new Set();
  const changed = new Set();
  for (const m of range) {
    strings(m, (s) => identifiers(s, all));
    for (const c of toolCalls(m)) {
      strings(c.args, (s) => identifiers(s, inCalls));
      written(c, changed);
    }
  }
  const text = out.summary.text;
  const at = text.indexOf(HEADING);
  const trail = at < 0 ? '' : text.slice(at);
  return {
    range: range.length,
    all: share(all, text),
    calls: share(inCalls, text),
    changed: share(changed, text),
    trail_tokens: countTokens(trail),
    summary_tokens: countTokens(text),
    facts: out.summary.facts,
    trail,
  };
}

const pct = (x) => `${(100 * x).toFixed(1)}%`;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : Number.NaN;
};

async function main() {
  const llm = await startLossyLlm();
  const server = await startServer('compactor', {
    env: {
      LOG_LEVEL: 'warn',
      COMPACTOR_STORE_URL: 'memory:',
      OPENAI_BASE_URL: llm.url,
      OPENAI_API_KEY: 'x',
      COMPACTOR_SUMMARIZER_MODEL: 'gpt-4o-mini',
      COMPACTOR_SUMMARIZER_MAX_RETRIES: '0',
    },
  });
  const rows = [];
  try {
    for (const t of [...transcripts(), ...(await converted())].filter((x) => FILES.test(x.file))) {
      const trail = await measure(server.base, t, undefined);
      const guard = await measure(server.base, t, 0);
      rows.push({ file: t.file, trail, guard });
    }
  } finally {
    await server.stop();
    await llm.stop();
  }
  const measured = rows.filter((r) => !r.trail.skipped);
  const table = [
    '| transcript | range | paths+URLs | kept (guard only) | kept (trail) | in tool calls | kept (trail) | modified/created | kept (trail) | trail tokens |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of measured) {
    const { trail: a, guard: g } = r;
    table.push(
      `| ${r.file.replace(/\.json$/, '').slice(0, 70)} | ${a.range} | ${a.all.n} | ${pct(g.all.share)} | ${pct(a.all.share)} | ${a.calls.n} | ${pct(a.calls.share)} | ${a.changed.n} | ${pct(a.changed.share)} | ${a.trail_tokens} |`,
    );
  }
  const col = (f) => measured.map(f);
  const agg = {
    transcripts: measured.length,
    skipped: rows.length - measured.length,
    all_median_guard: median(col((r) => r.guard.all.share)),
    all_min_guard: Math.min(...col((r) => r.guard.all.share)),
    all_median: median(col((r) => r.trail.all.share)),
    all_min: Math.min(...col((r) => r.trail.all.share)),
    calls_pooled:
      col((r) => r.trail.calls.kept).reduce((x, y) => x + y, 0) / col((r) => r.trail.calls.n).reduce((x, y) => x + y, 0),
    calls_min: Math.min(...col((r) => r.trail.calls.share)),
    changed_pooled:
      col((r) => r.trail.changed.kept).reduce((x, y) => x + y, 0) /
      Math.max(
        1,
        col((r) => r.trail.changed.n).reduce((x, y) => x + y, 0),
      ),
    trail_tokens_median: median(col((r) => r.trail.trail_tokens)),
    trail_tokens_max: Math.max(...col((r) => r.trail.trail_tokens)),
  };
  table.push(
    `| **median** (min) | | | ${pct(agg.all_median_guard)} (${pct(agg.all_min_guard)}) | ${pct(agg.all_median)} (${pct(agg.all_min)}) | | ${pct(agg.calls_pooled)} pooled (min ${pct(agg.calls_min)}) | | ${pct(agg.changed_pooled)} pooled | ${agg.trail_tokens_median} (max ${agg.trail_tokens_max}) |`,
  );
  console.log(table.join('\n'));
  const goals = {
    changed_100: agg.changed_pooled === 1,
    calls_99: agg.calls_pooled >= 0.99,
    all_median_95: agg.all_median >= 0.95,
    all_min_80: agg.all_min >= 0.8,
  };
  console.log(`\ngoals: ${JSON.stringify(goals)}`);
  const id = commit();
  const path = process.env.FIDELITY_OUT ?? `${ROOT}bench/out/fidelity-${id}.json`;
  mkdirSync(`${ROOT}bench/out`, { recursive: true });
  writeFileSync(path, `${JSON.stringify({ commit: id, keep: KEEP, aggregate: agg, goals, rows }, null, 1)}\n`);
  console.log(`wrote ${path}`);
}

await main();
