import type { PreparedHistory } from './prepared.js';

/**
 * Which tool, if any, gives an offloaded original back to the model: the hints a placeholder or a
 * summary writes name it ("call the `mcp__compactor__recall` tool with art_…") only when the
 * request offers it; otherwise they name the artifact plainly ("stored as art_…"), so a model is
 * never sent looking for a tool it does not have.
 */

/** What a tool name given to hints may hold: safe inside a marker line (no backtick, no newline). */
export const RECALL_TOOL_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * The forms a recall tool's name takes, best first: Compactor's own `recall` (an SDK app's tool),
 * Claude Code's MCP names (`mcp__<server>__recall`), Codex's (`<server>__recall`) and opencode's
 * (`<server>_recall`, its server name sanitized to `[A-Za-z0-9_-]`).
 */
const FORMS: readonly RegExp[] = [
  /^recall$/,
  /^mcp__[A-Za-z0-9_-]{1,48}__recall$/,
  /^[A-Za-z0-9][A-Za-z0-9_-]{0,47}__recall$/,
  /^[A-Za-z0-9][A-Za-z0-9_-]{0,47}_recall$/,
];

type Json = Record<string, unknown>;
const isRecord = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The names a tool definition declares, in any format: Anthropic, Chat, Responses, Gemini's `functionDeclarations`. */
function namesOf(tool: unknown, out: string[]): void {
  if (!isRecord(tool)) return;
  if (typeof tool.name === 'string') out.push(tool.name);
  if (isRecord(tool.function) && typeof tool.function.name === 'string') out.push(tool.function.name);
  for (const key of ['functionDeclarations', 'function_declarations', 'tools'] as const) {
    const list = tool[key];
    if (Array.isArray(list)) for (const d of list) if (isRecord(d) && typeof d.name === 'string') out.push(d.name);
  }
}

/**
 * The recall tool a request offers: among its `tools` (Anthropic's deferred ones included) and the
 * tools a Responses history declares (`additional_tools` items, as Codex sends with its default
 * model, and the namespaces its client-run `tool_search` loaded), the name of the best form
 * (`FORMS`), or undefined when none matches. Linear in the tools and the history's length.
 */
export function recallToolOf(tools: readonly unknown[] | undefined, messages?: readonly unknown[]): string | undefined {
  const names: string[] = [];
  for (const tool of tools ?? []) namesOf(tool, names);
  for (const m of messages ?? []) {
    if (!isRecord(m) || !Array.isArray(m.tools)) continue;
    if (m.type === 'additional_tools') for (const tool of m.tools) namesOf(tool, names);
    // Codex loads deferred MCP tools with its own tool search: a namespace whose tools include `recall`.
    if (m.type === 'tool_search_output')
      for (const space of m.tools)
        if (isRecord(space) && Array.isArray(space.tools)) for (const tool of space.tools) namesOf(tool, names);
  }
  for (const form of FORMS) {
    const found = names.find((n) => n.length <= 64 && form.test(n));
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A deferred tool Claude Code lists by name, one a line, for its ToolSearch to load. */
const DEFERRED_TOOL = /^mcp__[A-Za-z0-9_-]{1,48}__recall$/;
/** A deferred MCP namespace Codex lists (`- mcp__compactor`) for its tool_search to load: Compactor's server exposes `recall`. */
const DEFERRED_NAMESPACE = /^(?:- )?mcp__[A-Za-z0-9_-]*compactor[A-Za-z0-9_-]*$/;

/**
 * A recall tool the agent offers but defers (loaded on demand by its own tool search), named in
 * the instructions it sends: Claude Code lists deferred tools one a line (`mcp__compactor__recall`),
 * Codex lists deferred namespaces (`- mcp__compactor`; the tool inside is `recall`). `texts` are
 * the request's instructions (system, head, first user turn). Linear in their length.
 */
export function deferredRecallTool(texts: readonly string[]): string | undefined {
  let namespace = false;
  for (const text of texts) {
    if (!text.includes('mcp__')) continue;
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (line.length > 64 || !line.includes('mcp__')) continue;
      if (DEFERRED_TOOL.test(line)) return line;
      if (DEFERRED_NAMESPACE.test(line)) namespace = true;
    }
  }
  return namespace ? 'recall' : undefined;
}

/**
 * The recall tool a request offers (`history/recall-tool.ts`): declared in its tools, or deferred
 * and named in its instructions (the system field and the messages up to the first the model wrote).
 */
export function offeredRecallTool(
  h: PreparedHistory,
  tools: readonly unknown[] | undefined,
  system: unknown,
): string | undefined {
  const declared = recallToolOf(tools, h.messages);
  if (declared !== undefined) return declared;
  const texts: string[] = [...textsOf(system)];
  for (let i = 0; i < h.items.length; i++) {
    const role = h.items[i]?.role;
    if (role === 'assistant' || role === 'tool') break;
    texts.push(h.format.prose(h.messages[i]));
  }
  return deferredRecallTool(texts);
}

/** The texts of a request's `system` field: a string, text blocks, or Gemini's `parts`. */
function textsOf(system: unknown): string[] {
  if (typeof system === 'string') return [system];
  const blocks = Array.isArray(system) ? system : (system as { parts?: unknown } | undefined)?.parts;
  if (!Array.isArray(blocks)) return [];
  return blocks.flatMap((b) => (typeof (b as { text?: unknown })?.text === 'string' ? [(b as { text: string }).text] : []));
}
