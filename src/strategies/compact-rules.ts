import { z } from 'zod';

/**
 * Placeholders for compacted tool traffic. A rule names a tool and the text that replaces its old
 * results; the template may use `{args.<name>}` (from the matching call's arguments, with
 * alternatives and a quoted fallback: `{args.file_path|args.path|"a file"}`), `{tool}`, `{id}` (the
 * artifact id) and `{tokens}` (the size of what was removed).
 */
export const RuleSchema = z
  .strictObject({
    tool: z.string().min(1).max(256).describe('tool name, matched exactly'),
    placeholder: z.string().min(1).max(2000).optional().describe('template of the text that replaces an old result'),
    keep_last: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe("this tool's newest N results are kept whatever the other options say"),
  })
  .meta({ id: 'CompactRule' });

export type Rule = z.output<typeof RuleSchema>;

interface BuiltIn {
  names: readonly string[];
  placeholder: string;
}

/**
 * Built-in placeholders for the common tools of popular agents (Claude Code, SWE-agent,
 * mini-swe-agent, OpenHands, Cline, Codex), matched case-insensitively. A request's own `rules`
 * take precedence.
 */
export const BUILT_IN_RULES: readonly BuiltIn[] = [
  {
    names: [
      'read',
      'read_file',
      'readfile',
      'view',
      'view_file',
      'open_file',
      'cat',
      'get_file_contents',
      'notebookread',
      'ls',
      'list_dir',
      'list_files',
    ],
    placeholder:
      'Content read from {args.file_path|args.path|args.target_file|args.filename|args.notebook_path|"a file"}. Re-read it if needed.',
  },
  {
    names: [
      'grep',
      'glob',
      'search',
      'search_files',
      'search_dir',
      'search_file',
      'find_file',
      'find',
      'codebase_search',
      'file_search',
      'ripgrep',
      'rg',
    ],
    placeholder:
      'Search results for {args.pattern|args.query|args.regex|args.search_term|args.glob|"a search"} processed. Search again if needed.',
  },
  {
    names: ['web_search', 'websearch', 'search_web', 'brave_search', 'tavily_search', 'google_search'],
    placeholder: 'Web search results processed. Query: {args.query|args.q|"not recorded"}. Search again if needed.',
  },
  {
    names: ['web_fetch', 'webfetch', 'fetch', 'fetch_url', 'browse', 'read_url', 'open_url', 'scrape'],
    placeholder: 'Page content fetched from {args.url|args.uri|"a URL"} processed. Fetch it again if needed.',
  },
  {
    names: [
      'bash',
      'shell',
      'sh',
      'run_command',
      'execute_command',
      'run_shell_command',
      'terminal',
      'exec',
      'execute_bash',
      'run_terminal_cmd',
      'local_shell',
    ],
    placeholder: 'Output of the command `{args.command|args.cmd|args.script|"not recorded"}` cleared. Run it again if needed.',
  },
];

export { WRITE_TOOLS } from '../history/vocabulary.js';

export const DEFAULT_PLACEHOLDER = 'Output of {tool} cleared to save context.';
export const INPUT_PLACEHOLDER = '[Content saved to file]';

function renderValue(value: unknown): string {
  // Arguments are parsed JSON, so this is always a string; `String` only guards the type.
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > 200 ? `${text.slice(0, 197)}...` : text;
}

/**
 * The call's own argument `name`, or undefined. Only own properties: a template naming a built-in
 * (`{args.toString}`, `{args.constructor}`, `{args.__proto__}`) must not reach the prototype.
 */
function ownArgument(args: Record<string, unknown> | undefined, name: string): unknown {
  return args !== undefined && Object.hasOwn(args, name) ? args[name] : undefined;
}

/** One `{…}` of a template as written, and its alternatives in order (`tool`, `id`, `tokens`, `args.<name>`, a quoted fallback). */
interface Hole {
  readonly whole: string;
  readonly alts: readonly string[];
}
/** A template read once: its text between holes, and its holes (`parts[i]`, then `holes[i]`, …, then the last part). */
interface Compiled {
  readonly parts: readonly string[];
  readonly holes: readonly Hole[];
}

/** Templates read before (a few built-in ones and the rules of recent requests), by their text. */
const compiled = new Map<string, Compiled>();
const COMPILED_MAX = 256;

function compile(template: string): Compiled {
  const known = compiled.get(template);
  if (known) return known;
  const parts: string[] = [];
  const holes: Hole[] = [];
  let from = 0;
  for (const m of template.matchAll(/\{([^{}]+)\}/g)) {
    parts.push(template.slice(from, m.index));
    holes.push({ whole: m[0], alts: (m[1] as string).split('|').map((s) => s.trim()) });
    from = m.index + m[0].length;
  }
  parts.push(template.slice(from));
  const out = { parts, holes };
  if (compiled.size >= COMPILED_MAX) compiled.clear();
  compiled.set(template, out);
  return out;
}

/**
 * Fills a template from the call's arguments; missing values take the quoted fallback or `unknown`.
 * `{args.<name>}` reads only the arguments' own properties; a value longer than 200 characters is
 * cut with `...`. A hole none of whose alternatives is known stays as it was written.
 */
export function render(
  template: string,
  vars: { tool: string; id: string | null; tokens: number; args: Record<string, unknown> | undefined },
): string {
  const { parts, holes } = compile(template);
  // An argument named by several placeholders is rendered once (it may be a large object).
  const rendered = new Map<string, string>();
  const argument = (name: string, value: unknown) => {
    const known = rendered.get(name);
    if (known !== undefined) return known;
    const text = renderValue(value);
    rendered.set(name, text);
    return text;
  };
  const fill = ({ whole, alts }: Hole): string => {
    for (const alt of alts) {
      if (alt.startsWith('"') && alt.endsWith('"') && alt.length >= 2) return alt.slice(1, -1);
      if (alt === 'tool') return vars.tool;
      if (alt === 'id') return vars.id ?? 'none';
      if (alt === 'tokens') return String(vars.tokens);
      if (alt.startsWith('args.')) {
        const value = ownArgument(vars.args, alt.slice('args.'.length));
        if (value !== undefined && value !== null && value !== '') return argument(alt, value);
        continue;
      }
      return whole;
    }
    return 'unknown';
  };
  let out = parts[0] as string;
  for (let i = 0; i < holes.length; i++) out += fill(holes[i] as Hole) + (parts[i + 1] as string);
  return out;
}

/** The placeholder template for a tool: the request's rule, else a built-in one, else the default. */
export function placeholderFor(tool: string, rules: readonly Rule[]): string {
  const own = rules.find((r) => r.tool === tool)?.placeholder;
  if (own) return own;
  const lower = tool.toLowerCase();
  return BUILT_IN_RULES.find((r) => r.names.includes(lower))?.placeholder ?? DEFAULT_PLACEHOLDER;
}

/** Head and tail of a text, each about `keep / 2` tokens (cut on characters, by the text's own ratio). */
export function headAndTail(text: string, tokens: number, keep: number): { head: string; tail: string } {
  const chars = Math.max(1, Math.floor((text.length * keep) / 2 / Math.max(tokens, 1)));
  return { head: text.slice(0, chars), tail: text.slice(text.length - chars) };
}

/**
 * What a placeholder ends with: the tool that gives the original back when the request offers one
 * (`Markers.recallTool`), else the artifact id plainly. The text depends on the artifact and the
 * tool only, so a prompt cache keeps it; an earlier placeholder is never rewritten (it verifies as it is).
 */
export const recallNote = (tool: string | undefined, id: string | null, tokens: number) => {
  if (!id) return `(${tokens} tokens cleared)`;
  return tool
    ? `(${tokens} tokens offloaded; call the \`${tool}\` tool with ${id} to see them)`
    : `(${tokens} tokens offloaded as ${id})`;
};
