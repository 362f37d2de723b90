import type { Trail } from './trail.js';
import { editorTrail, shellTrail } from './trail-shell.js';

/** The keys tools name their file by (Claude Code `file_path`, `notebook_path`; most others `path`). */
const PATH_KEYS = ['file_path', 'path', 'notebook_path', 'target_file', 'filename', 'file', 'absolute_path', 'filePath'];

const READ_TOOLS = new Set(['read', 'read_file', 'view', 'view_file', 'open_file', 'readfile', 'notebookread', 'cat']);
const WRITE_TOOLS = new Set(['write', 'write_file', 'create_file', 'write_to_file', 'writefile', 'create']);
const EDIT_TOOLS = new Set([
  'edit',
  'multiedit',
  'notebookedit',
  'edit_file',
  'replace_in_file',
  'str_replace',
  'apply_diff',
  'insert',
  'search_replace',
  'edit_notebook',
]);
const DELETE_TOOLS = new Set(['delete_file', 'remove_file', 'delete']);
const EDITOR_TOOLS = new Set(['str_replace_editor', 'str_replace_based_edit_tool', 'text_editor', 'edit_tool']);
const SHELL_TOOLS = new Set([
  'bash',
  'shell',
  'execute',
  'execute_bash',
  'execute_command',
  'run_command',
  'run_shell_command',
  'run_terminal_cmd',
  'terminal',
  'exec',
  'local_shell',
  'container.exec',
]);
const FETCH_TOOLS = new Set(['webfetch', 'fetch', 'web_fetch', 'fetch_url', 'browse', 'open_url', 'read_url']);
const PATCH_TOOLS = new Set(['apply_patch', 'patch']);

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The file a tool call names, from its structured arguments. */
function pathOf(input: Record<string, unknown>): string | undefined {
  for (const key of PATH_KEYS) {
    const v = str(input[key]);
    if (v) return v;
  }
  return undefined;
}

/** A shell tool's script: `command` as a string, or an argv (`["bash", "-lc", script]`). */
export function shellScript(input: Record<string, unknown>): string | undefined {
  const command = input.command ?? input.cmd ?? input.script;
  if (typeof command === 'string') return command;
  if (Array.isArray(command) && command.every((w) => typeof w === 'string')) {
    const words = command as string[];
    const flag = words.findIndex((w) => w === '-c' || w === '-lc');
    return flag >= 0 && flag < words.length - 1 ? (words.at(-1) as string) : words.join(' ');
  }
  return undefined;
}

/**
 * The files a patch adds, updates and deletes: `*** Add File:`, `*** Update File:`, `*** Delete
 * File:`, `*** Move to:` (apply_patch) and unified diff headers (`--- a/x`, `+++ b/x`, `/dev/null`
 * for an added or deleted file). One pass over its lines.
 */
export function patchTrail(patch: string, trail: Trail): void {
  let from: string | undefined;
  let at = 0;
  while (at < patch.length) {
    const newline = patch.indexOf('\n', at);
    const end = newline < 0 ? patch.length : newline;
    const line = patch.slice(at, Math.min(end, at + 400)).replace(/\r$/, '');
    at = end + 1;
    if (line.startsWith('*** Add File: ')) trail.file(line.slice(14), 'created');
    else if (line.startsWith('*** Update File: ')) trail.file(line.slice(17), 'modified');
    else if (line.startsWith('*** Delete File: ')) trail.file(line.slice(17), 'deleted');
    else if (line.startsWith('*** Move to: ')) trail.file(line.slice(13), 'created');
    else if (line.startsWith('--- ')) from = diffPath(line.slice(4));
    else if (line.startsWith('+++ ')) {
      const to = diffPath(line.slice(4));
      if (to === undefined && from !== undefined) trail.file(from, 'deleted');
      else if (to !== undefined) trail.file(to, from === undefined ? 'created' : 'modified');
      from = undefined;
    }
  }
}

/** A unified diff header's path without its `a/`/`b/` prefix and timestamp; undefined for `/dev/null`. */
function diffPath(header: string): string | undefined {
  const path = header.split('\t')[0]?.trim() ?? '';
  if (path === '/dev/null' || path === '') return undefined;
  return /^[ab]\//.test(path) ? path.slice(2) : path;
}

/**
 * What one tool call did, from its name and structured arguments: files read, written, modified
 * or deleted, URLs fetched. Returns the shell script it ran, if it ran one (the command the trail
 * lists with its exit status).
 */
export function callTrail(
  name: string,
  input: Record<string, unknown> | undefined,
  trail: Trail,
  state: { open?: string },
): string | undefined {
  if (!input) return undefined;
  const tool = name.toLowerCase();
  const path = pathOf(input);
  if (EDITOR_TOOLS.has(tool)) editorTrail(input.command, path, trail);
  else if (PATCH_TOOLS.has(tool)) patchTrail(str(input.input) ?? str(input.patch) ?? str(input.diff) ?? '', trail);
  else if (SHELL_TOOLS.has(tool)) {
    const script = shellScript(input);
    if (script === undefined) return undefined;
    if (script.includes('*** Begin Patch') || script.includes('\n+++ ')) patchTrail(script, trail);
    shellTrail(script, trail, state);
    return script;
  } else if (FETCH_TOOLS.has(tool)) {
    const url = str(input.url) ?? str(input.uri);
    if (url) trail.add('urls', url);
  } else if (path !== undefined) {
    if (READ_TOOLS.has(tool)) trail.file(path, 'read');
    else if (WRITE_TOOLS.has(tool)) trail.file(path, 'written');
    else if (EDIT_TOOLS.has(tool)) trail.file(path, 'modified');
    else if (DELETE_TOOLS.has(tool)) trail.file(path, 'deleted');
  }
  return undefined;
}
