import { loadCorpus, type Transcript } from './corpus.js';

type Chat = Record<string, unknown>;

function text(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return (content as Chat[]).map((p) => (typeof p.text === 'string' ? p.text : '')).join('\n');
}

/**
 * Converts an OpenAI Chat history to OpenAI Responses input items, as an agent on the Responses
 * API would have sent it: system and developer messages, user messages with input_text parts,
 * each assistant turn as one response (a reasoning item carrying the `reasoning_content`, the
 * assistant message, one function_call per tool call), and function_call_output items.
 */
export function chatToResponses(messages: readonly unknown[]): unknown[] {
  const out: unknown[] = [];
  messages.forEach((raw, i) => {
    const m = raw as Chat;
    if (m.role === 'system' || m.role === 'developer') {
      out.push({ type: 'message', role: m.role, content: [{ type: 'input_text', text: text(m.content) }] });
    } else if (m.role === 'user') {
      out.push({ type: 'message', role: 'user', content: [{ type: 'input_text', text: text(m.content) }] });
    } else if (m.role === 'tool') {
      out.push({ type: 'function_call_output', call_id: m.tool_call_id, output: text(m.content) });
    } else if (m.role === 'assistant') {
      const calls = (m.tool_calls as Chat[] | undefined) ?? [];
      const said = text(m.content);
      if (typeof m.reasoning_content === 'string' && m.reasoning_content !== '') {
        out.push({
          type: 'reasoning',
          id: `rs_${i}`,
          summary: [{ type: 'summary_text', text: m.reasoning_content }],
          encrypted_content: Buffer.from(`opaque-${i}`).toString('base64'),
        });
      }
      if (said !== '' || calls.length === 0) {
        out.push({
          type: 'message',
          role: 'assistant',
          id: `msg_${i}`,
          status: 'completed',
          content: [{ type: 'output_text', text: said || '(no text)', annotations: [], logprobs: [] }],
        });
      }
      calls.forEach((call, k) => {
        const fn = call.function as Chat;
        out.push({
          type: 'function_call',
          id: `fc_${i}_${k}`,
          call_id: call.id,
          name: fn.name,
          arguments: fn.arguments,
          status: 'completed',
        });
      });
    }
  });
  return out;
}

/**
 * Converts an OpenAI Chat history to Gemini contents: the system prompt to `systemInstruction`,
 * assistant turns to `model` contents (reasoning as a thought part, tool calls as functionCall
 * parts with ids and a thought signature on the first), tool results to functionResponse parts;
 * consecutive contents of one role merge so that roles alternate.
 */
export function chatToGemini(messages: readonly unknown[]): { system: Record<string, unknown> | undefined; messages: unknown[] } {
  const contents: { role: string; parts: unknown[] }[] = [];
  const system: string[] = [];
  const names = new Map<string, string>();
  const push = (role: 'user' | 'model', parts: unknown[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  messages.forEach((raw, i) => {
    const m = raw as Chat;
    const said = text(m.content);
    if (m.role === 'system' || m.role === 'developer') system.push(said);
    else if (m.role === 'user') push('user', [{ text: said || '(empty)' }]);
    else if (m.role === 'tool') {
      const id = m.tool_call_id as string;
      push('user', [{ functionResponse: { id, name: names.get(id) ?? 'tool', response: { output: said } } }]);
    } else if (m.role === 'assistant') {
      const parts: unknown[] = [];
      if (typeof m.reasoning_content === 'string' && m.reasoning_content !== '')
        parts.push({ text: m.reasoning_content, thought: true });
      if (said !== '') parts.push({ text: said });
      ((m.tool_calls as Chat[] | undefined) ?? []).forEach((call, k) => {
        const fn = call.function as Chat;
        names.set(call.id as string, fn.name as string);
        parts.push({
          functionCall: { id: call.id, name: fn.name, args: JSON.parse(fn.arguments as string) },
          ...(k === 0 ? { thoughtSignature: Buffer.from(`signature-${i}`).toString('base64') } : {}),
        });
      });
      if (parts.length === 0) parts.push({ text: '(no text)' });
      if (contents.length === 0) contents.push({ role: 'user', parts: [{ text: '(start)' }] });
      push('model', parts);
    }
  });
  return { system: system.length ? { parts: system.map((t) => ({ text: t })) } : undefined, messages: contents };
}

/** The transcripts converted to the Responses and Gemini formats (issue 6): two Claude Code, two mini-swe-agent. */
export const CONVERTED_SOURCES = [
  'openai/claude-code-opus-4-5__cctrace-phase0-investigation.json',
  'openai/claude-code-opus-4__cctrace-f33cdb42.json',
  'openai/mini-swe-agent-gemini-3-pro__django__django-11099.json',
  'openai/mini-swe-agent-gemini-3-pro__sympy__sympy-20590.json',
];

export interface ConvertedTranscript extends Omit<Transcript, 'format'> {
  format: 'openai-responses' | 'gemini';
  system?: Record<string, unknown>;
}

/** The converted transcripts, both formats, built in memory from the corpus. */
export function loadConverted(): ConvertedTranscript[] {
  const corpus = loadCorpus();
  return CONVERTED_SOURCES.flatMap((file) => {
    const source = corpus.find((t) => t.file === file);
    if (!source) throw new Error(`corpus file missing: ${file}`);
    const gemini = chatToGemini(source.messages);
    const base = { bytes: source.bytes, ...(source.model ? { model: source.model } : {}) };
    return [
      { ...base, file: `responses:${file}`, format: 'openai-responses' as const, messages: chatToResponses(source.messages) },
      {
        ...base,
        file: `gemini:${file}`,
        format: 'gemini' as const,
        messages: gemini.messages,
        ...(gemini.system ? { system: gemini.system } : {}),
      },
    ];
  });
}
