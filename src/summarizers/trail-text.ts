import { scanFactsOnce } from './fact-memo.js';
import { Trail } from './trail.js';
import { callTrail } from './trail-calls.js';
import type { TranscriptEntry } from './types.js';

/** Longest part of a line the line tests read: every test is bounded by it, so a pass stays linear. */
const LINE = 300;

/** Calls `each` with every line of `text` (its first `LINE` characters), in one pass. */
function eachLine(text: string, each: (line: string) => void): void {
  let at = 0;
  while (at < text.length) {
    const newline = text.indexOf('\n', at);
    const end = newline < 0 ? text.length : newline;
    each(text.slice(at, Math.min(end, at + LINE)));
    at = end + 1;
  }
}

const EXCEPTION = /^(?:E\s+)?([A-Za-z_][\w.]{0,80}(?:Error|Exception|Exit|Interrupt|Failure))(?::\s*(.*))?$/;
const COMPILER = /\berror (TS\d{1,5}): (.+)$/;
const RUSTC = /^error(\[E\d{1,5}\])?: (.+)$/;

/** An error a line reports (`KeyError: 'id'`, `AssertionError`, `error TS2345: …`), or undefined. */
export function errorOf(line: string): string | undefined {
  let trimmed = line.trim();
  // pytest's summary: `FAILED tests/x.py::test_y - KeyError: 'id'`.
  const dash = trimmed.startsWith('FAILED ') ? trimmed.indexOf(' - ') : -1;
  if (dash > 0) trimmed = trimmed.slice(dash + 3);
  const exception = EXCEPTION.exec(trimmed);
  if (exception) return exception[2] ? `${exception[1]}: ${exception[2]}` : exception[1];
  const compiler = COMPILER.exec(trimmed);
  if (compiler) return `error ${compiler[1]}: ${compiler[2]}`;
  const rustc = RUSTC.exec(trimmed);
  if (rustc) return trimmed;
  return undefined;
}

const TEST_CHAR = /[\w./-]/;
const ID_CHAR = /[\w:[\].-]/;

/** Pytest node ids of a text (`tests/x.py::test_y[param]`), with `failed`/`passed` when the line says. */
export function testsOf(text: string, each: (id: string, status: string) => void): void {
  let from = 0;
  for (;;) {
    const at = text.indexOf('.py::', from);
    if (at < 0) return;
    let start = at;
    while (start > 0 && at - start < 200 && TEST_CHAR.test(text.charAt(start - 1))) start--;
    let end = at + 5;
    while (end < text.length && end - at < 200 && ID_CHAR.test(text.charAt(end))) end++;
    from = end;
    if (end === at + 5 || start === at) continue;
    // What precedes the id on its line, if the line starts at most 20 characters before it.
    const near = text.slice(Math.max(0, start - 20), start);
    const newline = near.lastIndexOf('\n');
    const before = newline >= 0 || start <= 20 ? near.slice(newline + 1) : '';
    const after = text.slice(end, end + 9);
    const failed = /FAILED|ERROR/.test(before) || /^ (?:FAILED|ERROR)/.test(after);
    const passed = /PASSED/.test(before) || after.startsWith(' PASSED');
    each(text.slice(start, end).replace(/:+$/, ''), failed ? 'failed' : passed ? 'passed' : '');
  }
}

const EXIT = /<returncode>\s*(-?\d+)\s*<\/returncode>|\bexit(?:ed with)? (?:code|status):? ?(-?\d+)/i;

/** The exit status a command's result shows (its head or tail), or undefined. */
export function exitOf(text: string): string | undefined {
  const m = EXIT.exec(text.slice(0, 400)) ?? (text.length > 400 ? EXIT.exec(text.slice(-400)) : null);
  return m ? (m[1] ?? m[2]) : undefined;
}

const CONSTRAINT = /\b(?:must|never|don't|do not|only|always)\b/i;

/** The user's explicit constraints: sentences (at most `LINE` long) with must, never, don't, do not, only, always. */
export function constraintsOf(text: string, each: (sentence: string) => void): void {
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = text.charAt(i);
    if (i < text.length && c !== '\n' && !((c === '.' || c === '!' || c === '?') && /\s/.test(text.charAt(i + 1) || ' ')))
      continue;
    const sentence = text.slice(start, i + 1).trim();
    start = i + 1;
    if (sentence.length > 8 && sentence.length <= LINE && !sentence.includes('[compactor:') && CONSTRAINT.test(sentence))
      each(sentence);
  }
}

/**
 * Paths and URLs a text mentions (the fact scanner's), recorded as mentioned files and URLs; every
 * fact found goes to `onFact` too when given (the guard's ranking reads the same pass).
 */
function mentions(text: string, trail: Trail, onFact: ((fact: string) => void) | undefined): void {
  scanFactsOnce(
    text,
    (fact) => {
      onFact?.(fact);
      if (/^https?:\/\//.test(fact)) trail.add('urls', fact);
      else if (fact.includes('/') && !trail.has(fact)) trail.file(fact, 'mentioned');
    },
    onFact !== undefined,
  );
}

/** Every string inside a tool call's arguments (bounded depth), for the mentions they hold. */
function strings(value: unknown, each: (s: string) => void, depth = 0): void {
  if (typeof value === 'string') each(value);
  else if (depth < 8 && Array.isArray(value)) for (const v of value) strings(v, each, depth + 1);
  else if (depth < 8 && value && typeof value === 'object') for (const v of Object.values(value)) strings(v, each, depth + 1);
}

/** A command as the trail lists it: its first line, in backticks, with its exit status when known. */
const commandItem = (script: string, status: string | undefined) => {
  const trimmed = script.trim();
  const newline = trimmed.indexOf('\n');
  const first = newline < 0 ? trimmed : trimmed.slice(0, newline);
  const line = first.length > 100 ? `${first.slice(0, 99)}…` : first;
  return `\`${line}\`${status === undefined ? '' : ` → exit ${status}`}`;
};

/**
 * The artifact trail of a range's transcript entries, after an earlier trail (the fold): tool
 * calls' structured arguments (files, URLs, commands), results (exit status, errors, tests, the
 * paths and URLs they name), the user's constraints, and the paths and URLs anyone mentioned.
 * Every fact the scan finds goes to `onFact` as well. Linear in the entries' length.
 */
export function buildTrail(
  entries: readonly TranscriptEntry[],
  earlier: Trail = new Trail(),
  onFact?: (fact: string) => void,
): Trail {
  const trail = new Trail();
  const state: { open?: string } = {};
  const commands = new Map<string, string>();
  const later: Array<() => void> = [];
  for (const e of entries) {
    for (const call of e.calls) {
      const script = callTrail(call.name, call.input, trail, state);
      if (script !== undefined && script.trim() !== '') {
        trail.add('commands', commandItem(script, undefined), script.trim());
        if (call.id) commands.set(call.id, script.trim());
      }
      if (call.input) strings(call.input, (s) => later.push(() => mentions(s, trail, onFact)));
      else later.push(() => mentions(call.args, trail, onFact));
    }
    if (e.tool) {
      const script = e.tool.callId === undefined ? undefined : commands.get(e.tool.callId);
      const status = exitOf(e.text) ?? (e.tool.error ? 'error' : undefined);
      if (script !== undefined && status !== undefined) trail.add('commands', commandItem(script, status), script);
    }
    if (e.role === 'tool' || e.role === 'user') eachLine(e.text, (line) => addError(line, trail));
    if (e.role === 'tool' || e.role === 'assistant')
      testsOf(e.text, (id, status) => trail.add('tests', status ? `${id} (${status})` : id, id));
    if (e.role === 'user' && !e.tool) constraintsOf(e.text, (s) => trail.add('constraints', s));
    later.push(() => mentions(e.text, trail, onFact));
  }
  // Mentions last: a path also read or written is listed as such, not as mentioned.
  for (const run of later) run();
  return earlier.merge(trail);
}

function addError(line: string, trail: Trail): void {
  const error = errorOf(line);
  if (error !== undefined) trail.add('errors', error);
}
