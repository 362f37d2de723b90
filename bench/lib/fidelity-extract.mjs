/**
 * The fidelity benchmark's own extractor (independent of src/): the paths and URLs of a range of
 * wire messages, those inside the agent's own tool calls' arguments, the files it modified or
 * created, and the share of each found verbatim in a summary. Also the fake summarizer that names
 * nothing, and the corpus loader.
 */

import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';

export const LOSSY =
  'The agent investigated the task, ran several commands, changed some code and checked the results. Work continues.';

/**
 * A fake OpenAI-compatible server whose every summary names nothing; counts the calls it answers,
 * each after `delayMs` (a model's latency: what lets a prepared summary be still in the making).
 */
export async function startLossyLlm({ delayMs = 0 } = {}) {
  let calls = 0;
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    calls++;
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
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    calls: () => calls,
    stop: () => new Promise((r) => server.close(r)),
  };
}

/** The corpus's native transcripts ({openai,anthropic}/*.json), sorted by file name. */
export function corpusTranscripts(dir) {
  const out = [];
  for (const sub of ['openai', 'anthropic']) {
    for (const name of readdirSync(`${dir}/${sub}`)
      .filter((f) => f.endsWith('.json'))
      .sort()) {
      const data = JSON.parse(readFileSync(`${dir}/${sub}/${name}`, 'utf8'));
      out.push({
        file: `${sub}/${name}`,
        format: sub === 'anthropic' ? 'anthropic' : 'openai-chat',
        body: { messages: data.messages, ...(data.tools ? { tools: data.tools } : {}) },
      });
    }
  }
  return out;
}

const URL_RE = /https?:\/\/[^\s"'<>()[\]`|\\]+/g;
const PATH_RE = /(?:~|\.{1,2})?\/?(?:[\w@+-][\w.@+-]*\/)+[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,8}(?![\w/.@+-])/g;
const trimPunct = (s) => s.replace(/[.,;:!?]+$/, '');

/** Paths and URLs of a string. */
export function identifiers(text, into) {
  for (const m of text.matchAll(URL_RE)) into.add(trimPunct(m[0]));
  // A literal `\n` or `\t` (text escaped twice) separates words.
  const noUrls = text.replace(URL_RE, ' ').replace(/\\[ntr]/g, ' ');
  for (const m of noUrls.matchAll(PATH_RE)) {
    const p = trimPunct(m[0]);
    if (p.length <= 200 && !/^\d/.test(p)) into.add(p);
  }
}

/** Every string of a JSON value. */
export function strings(value, each) {
  if (typeof value === 'string') each(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, each);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) strings(v, each);
}

/** The tool calls of one wire message, any format: [{name, args}] with args parsed. */
export function toolCalls(m) {
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
export function written(call, into) {
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
export function share(items, text) {
  const missed = [...items].filter((x) => !text.includes(x));
  return { n: items.size, kept: items.size - missed.length, share: items.size ? 1 - missed.length / items.size : 1, missed };
}

/** What a range of wire messages holds: all paths and URLs, those in tool calls, files changed. */
export function rangeIdentifiers(range) {
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
  return { all, inCalls, changed };
}
