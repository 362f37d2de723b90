import { asArray, asObject } from './parse.js';
import type { JsonObject, JsonValue, ModelRequest, Reply, Scenario, ToolSpec } from './types.js';

/** Shell tools by the names clients give them, best first (Claude Code, opencode, Codex, Gemini CLI, others). */
const SHELL_NAMES = ['Bash', 'bash', 'exec_command', 'shell', 'local_shell', 'run_shell_command', 'shell_command'];

/**
 * The client's shell tool: one named as a known shell tool (`Bash`, `bash`, `exec_command`, …),
 * else the first whose name mentions a shell or a command; undefined when it offers none.
 */
export function shellTool(tools: readonly ToolSpec[]): ToolSpec | undefined {
  for (const name of SHELL_NAMES) {
    const tool = tools.find((t) => t.name === name);
    if (tool) return tool;
  }
  return tools.find((t) => /bash|shell|exec|command/i.test(t.name) && t.kind !== 'custom');
}

/** A value of the schema's type, as small as it allows (its default, first enum value, minimum). */
function sampleValue(schema: JsonObject | undefined): JsonValue {
  if (!schema) return '';
  if (schema.default !== undefined) return schema.default;
  const options = asArray(schema.enum);
  if (options.length > 0) return options[0] ?? '';
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'integer' || type === 'number') return typeof schema.minimum === 'number' ? schema.minimum : 1;
  if (type === 'boolean') return false;
  if (type === 'array') return [];
  if (type === 'object') return {};
  return '';
}

/**
 * Arguments for a shell tool that fit its JSON schema: the command goes into `command` or `cmd`
 * (a string, or `["bash", "-lc", command]` where the schema wants an array), a `description`
 * says which step it is, and every other required property gets the smallest value its schema
 * allows. A schema with none of those names gets the command in its first required string.
 */
export function shellArguments(tool: ToolSpec, command: string, step: number): JsonObject {
  const properties = asObject(tool.schema?.properties) ?? {};
  const required = new Set(asArray(tool.schema?.required).filter((r): r is string => typeof r === 'string'));
  const args: JsonObject = {};
  let placed = false;
  for (const [key, raw] of Object.entries(properties)) {
    const prop = asObject(raw);
    if (/^(command|cmd)$/i.test(key)) {
      args[key] = prop?.type === 'array' ? ['bash', '-lc', command] : command;
      placed = true;
    } else if (key === 'description') args[key] = `Step ${step + 1}: print a long list of numbers`;
    else if (required.has(key)) args[key] = sampleValue(prop);
  }
  if (!placed) {
    const target = [...required].find((key) => asObject(properties[key])?.type === 'string') ?? 'command';
    args[target] = command;
  }
  return args;
}

/** Options of the scripted tool-call task. */
export interface ToolStepsOptions {
  /** Tool calls before the final answer (default 3). */
  steps?: number;
  /** Lines the first step's command prints (default 1500; each later step one more, so no two outputs are equal). */
  lines?: number;
  /** The command of each step (default `seq 1 <lines + step>`). */
  command?: (step: number) => string;
  /** The final answer (default: how many steps ran). */
  final?: (request: ModelRequest) => string;
}

/**
 * The default scenario: a task of `steps` shell commands with large outputs, then a text answer.
 * Which step a request is at is the number of tool results already in its history, so the script
 * needs no state and survives retries. A request that offers no shell tool (a title request) gets
 * a short text answer.
 */
export function toolSteps(options: ToolStepsOptions = {}): Scenario {
  const steps = options.steps ?? 3;
  const lines = options.lines ?? 1500;
  const command = options.command ?? ((step: number) => `seq 1 ${lines + step}`);
  return (request): Reply => {
    const tool = shellTool(request.tools);
    if (!tool) return { text: 'Counting numbers in the shell' };
    const step = request.toolResults;
    if (step >= steps) return { text: options.final?.(request) ?? `Done: ran ${steps} commands.` };
    return {
      text: `Running step ${step + 1}.`,
      toolCalls: [{ name: tool.name, input: shellArguments(tool, command(step), step) }],
    };
  };
}

/**
 * `toolSteps` for a conversation that a proxy reduces: the step is what the conversation has
 * been through, remembered per conversation (its session id, or first message), not the tool
 * results still in the request, which a window or a summary takes out. A retry of the same
 * request gets the same step; a request that answered the last call moves on.
 */
export function rememberedSteps(options: ToolStepsOptions = {}): Scenario {
  const inner = toolSteps(options);
  const issued = new Map<string, number>();
  return async (request) => {
    const known = issued.get(request.conversation) ?? 0;
    // A history with no tool result yet is a new task (or a title request): it starts at 0.
    const step = request.toolResults === 0 ? 0 : Math.max(request.toolResults, known);
    const reply = await inner({ ...request, toolResults: step });
    if (reply.toolCalls?.length) issued.set(request.conversation, step + 1);
    return reply;
  };
}

/** Where a recall scenario stands: the id it asked for, once it did. */
export interface RecallState {
  recalled?: string;
  /** The request (its `seq`) whose answer called the recall tool. */
  calledAt?: number;
}

/** A recall tool the request offers: Claude Code lists `mcp__compactor__recall` once loaded; Codex loads `recall` in a namespace. */
function recallTool(request: ModelRequest): { name: string; namespace?: string } | undefined {
  const listed = request.tools.find((t) => /(^|__)recall$/.test(t.name));
  if (listed) return { name: listed.name };
  for (const item of request.history) {
    const it = asObject(item);
    if (it?.type !== 'tool_search_output') continue;
    for (const raw of asArray(it.tools)) {
      const space = asObject(raw);
      const inner = asArray(space?.tools).map(asObject);
      if (space?.type === 'namespace' && inner.some((t) => t?.name === 'recall'))
        return { name: 'recall', namespace: String(space.name) };
      if (space?.name === 'recall') return { name: 'recall' };
    }
  }
  return undefined;
}

/**
 * `rememberedSteps`, then, once the request holds a placeholder's artifact id and the client
 * offers Compactor's MCP tools: the tool loaded if it is deferred (Claude Code's `ToolSearch`,
 * Codex's client-run `tool_search`), the recall tool called with that id, and a final answer once
 * its result is in. `state` says which id was recalled, by which request's answer.
 */
export function recallSteps(options: ToolStepsOptions, state: RecallState): Scenario {
  const inner = rememberedSteps(options);
  let searched = false;
  return async (request): Promise<Reply> => {
    if (state.recalled) return { text: `Recalled ${state.recalled}: done.` };
    // As a model would: the id the placeholder tells it to pass to the recall tool.
    // The hint names the tool the request offers (deferred ones included: `mcp__compactor__recall`, Codex's `recall`).
    const id = /call the `[A-Za-z0-9_.:-]{1,64}` tool with (art_[0-9a-f]{24})/.exec(JSON.stringify(request.history))?.[1];
    const tool = recallTool(request);
    if (id && tool) {
      state.recalled = id;
      state.calledAt = request.seq;
      return { text: 'Recalling the original.', toolCalls: [{ ...tool, input: { id } }] };
    }
    const search = request.tools.find((t) => t.name === 'ToolSearch' || t.kind === 'tool_search');
    if (id && search && !searched && JSON.stringify(request.body).includes('mcp__compactor')) {
      searched = true;
      const claude: JsonObject = { query: 'select:mcp__compactor__recall' };
      const codex: JsonObject = { query: 'compactor recall', limit: 8 };
      const input = search.name === 'ToolSearch' ? claude : codex;
      return { text: 'Loading the recall tool.', toolCalls: [{ name: search.name, input }] };
    }
    return inner(request);
  };
}
