import type { FileOp, Trail } from './trail.js';

/** One simple command of a shell line: its words, and its redirections (`>`, `>>`, `<`) with their targets. */
export interface SimpleCommand {
  words: string[];
  redirects: { op: string; target: string }[];
}

/** Characters the splitter acts on: quotes, backslash, blanks, newline, operators, redirections. */
const SPECIAL = new Uint8Array(128);
for (const c of '\'"\\ \t\r\n;|&()<>') SPECIAL[c.charCodeAt(0)] = 1;
const isSpecial = (code: number) => code < 128 && SPECIAL[code] === 1;

/** Characters that end a word outside quotes. */
const isBlank = (c: string) => c === ' ' || c === '\t' || c === '\r';

/**
 * Splits a shell script into simple commands in one left-to-right pass (linear in its length):
 * quotes and backslashes are honoured, `;`, `&`, `|`, `(`, `)`, newlines and `&&`/`||` separate
 * commands, `>`/`>>`/`<` (with an optional fd, `2>`, `&>`) take the next word as their target,
 * and a here-document's body (`<<EOF` … `EOF`) is skipped, never read as commands.
 */
export function splitShell(script: string): SimpleCommand[] {
  const out: SimpleCommand[] = [];
  let cmd: SimpleCommand = { words: [], redirects: [] };
  let word = '';
  let inWord = false;
  let pending: string | null = null;
  const heredocs: string[] = [];
  const endWord = () => {
    if (!inWord) return;
    if (pending === '<<') heredocs.push(word);
    else if (pending !== null) cmd.redirects.push({ op: pending, target: word });
    else cmd.words.push(word);
    pending = null;
    word = '';
    inWord = false;
  };
  const endCommand = () => {
    endWord();
    if (cmd.words.length > 0 || cmd.redirects.length > 0) out.push(cmd);
    cmd = { words: [], redirects: [] };
    pending = null;
  };
  const n = script.length;
  let i = 0;
  while (i < n) {
    const c = script.charAt(i);
    if (c === "'" || c === '"') {
      const close = script.indexOf(c, i + 1);
      const end = close < 0 ? n : close;
      word += script.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '\\' && i + 1 < n) {
      if (script.charAt(i + 1) !== '\n') word += script.charAt(i + 1);
      inWord = inWord || script.charAt(i + 1) !== '\n';
      i += 2;
    } else if (isBlank(c)) {
      endWord();
      i++;
    } else if (c === '\n') {
      endWord();
      // SWE-agent's `edit N:M` reads the lines up to `end_of_edit` as its replacement text.
      if (cmd.words[0] === 'edit') heredocs.push('end_of_edit');
      endCommand();
      i = skipHeredocs(script, i + 1, heredocs);
      heredocs.length = 0;
    } else if (c === ';' || c === '|' || c === '&' || c === '(' || c === ')') {
      if (c === '&' && script.charAt(i + 1) === '>') {
        endWord();
        pending = script.charAt(i + 2) === '>' ? '>>' : '>';
        i += pending.length + 1;
        continue;
      }
      endCommand();
      i++;
    } else if (c === '>' || c === '<') {
      // `2>` and `1>>`: the digit is the fd, not a word.
      if (inWord && /^\d$/.test(word)) {
        word = '';
        inWord = false;
      } else endWord();
      const redirect = redirectAt(script, i);
      i = redirect.next;
      if (redirect.op !== null) pending = redirect.op;
    } else {
      // A run of plain characters at once (most of a script).
      let j = i + 1;
      while (j < n && !isSpecial(script.charCodeAt(j))) j++;
      word += script.slice(i, j);
      inWord = true;
      i = j;
    }
  }
  endCommand();
  return out;
}

/**
 * The redirection operator at `i` (`>`, `>>`, `<`, `<<`, `<<-`) and where its target starts; no
 * operator for a duplicated fd (`2>&1`), which names no file.
 */
function redirectAt(script: string, i: number): { op: string | null; next: number } {
  const c = script.charAt(i);
  const op = script.charAt(i + 1) === c ? c + c : c;
  let next = i + op.length;
  if (op === '<<' && script.charAt(next) === '-') next++;
  if (script.charAt(next) !== '&') return { op, next };
  next++;
  while (next < script.length && /\d|-/.test(script.charAt(next))) next++;
  return { op: null, next };
}

/** Skips the bodies of the here-documents a line opened, from `from`: returns where the next line starts. */
function skipHeredocs(script: string, from: number, delimiters: readonly string[]): number {
  let at = from;
  for (const delimiter of delimiters) {
    while (at < script.length) {
      const newline = script.indexOf('\n', at);
      const end = newline < 0 ? script.length : newline;
      const line = script.slice(at, end).trim();
      at = end + 1;
      if (line === delimiter) break;
    }
  }
  return Math.min(at, script.length);
}

const READERS = new Set(['cat', 'head', 'tail', 'less', 'more', 'nl', 'bat', 'open', 'view']);
/** Options of head/tail/nl that take a value (`-n 20`). */
const VALUED = new Set(['-n', '-c', '-v', '-w', '-s', '-b', '-e']);
/** Options of sed that take a value (its script, given explicitly). */
const SED_VALUED = new Set(['-e', '-f']);

/** The operands of a command (its words after the name, options and their values left out). */
function operands(words: readonly string[], valued: ReadonlySet<string> = VALUED): string[] {
  const out: string[] = [];
  let literal = false;
  for (let k = 1; k < words.length; k++) {
    const w = words[k] as string;
    if (!literal && w === '--') literal = true;
    else if (!literal && w.startsWith('-') && w.length > 1) {
      if (valued.has(w)) k++;
    } else out.push(w);
  }
  return out;
}

/** The command's name and its words from there, past `sudo`, `env`, `time` and variable assignments. */
function commandWords(words: readonly string[]): string[] {
  let k = 0;
  while (
    k < words.length &&
    (/^[A-Za-z_]\w*=/.test(words[k] as string) || ['sudo', 'env', 'time', 'then', 'do', 'else'].includes(words[k] as string))
  )
    k++;
  return words.slice(k);
}

/**
 * What one shell script does to files, recorded in the trail: redirections, `sed -i`, `tee`,
 * `mv`, `cp`, `rm`, `touch`, `mkdir`, `git add/rm/mv/checkout`, readers (`cat`, `head`, `tail`,
 * `less`, `nl`), SWE-agent's `open`/`create`/`edit` (the open file), URLs given to `curl`/`wget`.
 * `state.open` is the file SWE-agent's `edit` changes, carried from call to call.
 */
export function shellTrail(script: string, trail: Trail, state: { open?: string }): void {
  for (const simple of splitShell(script)) {
    for (const r of simple.redirects) trail.file(r.target, r.op === '<' ? 'read' : r.op === '>>' ? 'modified' : 'written');
    const words = commandWords(simple.words);
    const name = (words[0] ?? '').split('/').pop() as string;
    // Most commands touch no file the trail lists: their words are not read.
    if (ACTORS.has(name)) commandTrail(name, words, trail, state);
  }
}

/** The commands `commandTrail` reads. */
const ACTORS = new Set([
  ...READERS,
  'sed',
  'tee',
  'rm',
  'rmdir',
  'unlink',
  'touch',
  'mkdir',
  'create',
  'mv',
  'cp',
  'git',
  'edit',
  'str_replace_editor',
  'curl',
  'wget',
]);

function commandTrail(name: string, words: readonly string[], trail: Trail, state: { open?: string }): void {
  const ops = (op: FileOp, list: readonly string[]) => {
    for (const w of list) trail.file(w, op);
  };
  const args = operands(words);
  if (name === 'sed') {
    const inPlace = words.some((w) => /^-[a-zA-Z]*i/.test(w) || w.startsWith('--in-place'));
    const explicit = words.some((w) => w === '-e' || w === '-f');
    const files = operands(words, SED_VALUED);
    ops(inPlace ? 'modified' : 'read', explicit ? files : files.slice(1));
  } else if (name === 'tee') ops('written', args);
  else if (name === 'rm' || name === 'rmdir' || name === 'unlink') ops('deleted', args);
  else if (name === 'touch' || name === 'mkdir' || name === 'create')
    ops('written', args.slice(0, name === 'create' ? 1 : undefined));
  else if (name === 'mv' || name === 'cp') {
    ops(name === 'mv' ? 'deleted' : 'read', args.slice(0, -1));
    ops('written', args.slice(-1));
  } else if (name === 'git') gitTrail(words, trail);
  else if (READERS.has(name)) {
    ops('read', name === 'open' ? args.slice(0, 1) : args);
    if (name === 'open' && args[0]) state.open = args[0];
  } else if (name === 'edit' && state.open) trail.file(state.open, 'modified');
  else if (name === 'str_replace_editor') editorTrail(args[0], args[1], trail);
  else if (name === 'curl' || name === 'wget') for (const w of words) if (/^https?:\/\//.test(w)) trail.add('urls', w);
  if (name === 'create' && args[0]) state.open = args[0];
}

function gitTrail(words: readonly string[], trail: Trail): void {
  const sub = words[1];
  const dash = words.indexOf('--');
  const files = dash >= 0 ? words.slice(dash + 1) : operands(words.slice(1));
  if (sub === 'add') for (const f of files) if (f !== '.' && f !== '-A') trail.file(f, 'modified');
  if (sub === 'rm') for (const f of files) trail.file(f, 'deleted');
  if (sub === 'checkout' && dash >= 0) for (const f of files) trail.file(f, 'modified');
  if (sub === 'mv' && files.length >= 2) {
    for (const f of files.slice(0, -1)) trail.file(f, 'deleted');
    trail.file(files.at(-1) as string, 'written');
  }
}

/** The editor tools' commands (`view`, `create`, `str_replace`, `insert`, `undo_edit`) on a path. */
export function editorTrail(command: unknown, path: unknown, trail: Trail): void {
  if (typeof path !== 'string') return;
  if (command === 'view') trail.file(path, 'read');
  else if (command === 'create') trail.file(path, 'written');
  else if (command === 'str_replace' || command === 'insert' || command === 'undo_edit' || command === 'edit')
    trail.file(path, 'modified');
  else trail.file(path, 'mentioned');
}
