/**
 * Message counting for the cost model (bench/lib/cost-model.mjs), as the service's format adapters
 * count: the text they extract, o200k_base with special-token strings as text, plus a framing of 3
 * per message; media at fixed rates; system, tools and request framing counted once per call.
 */
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';

const AS_TEXT = { disallowedSpecial: new Set() };
const PER_MESSAGE = 3;
const PER_REQUEST = 3;
const MEDIA = { 'openai-chat': { image: 765, document: 1500, audio: 500 }, anthropic: { image: 1600, document: 1500, audio: 0 } };

function countable(format, message) {
  const parts = [];
  const media = { image: 0, document: 0, audio: 0 };
  const text = (v) => {
    if (typeof v === 'string' && v.length > 0) parts.push(v);
  };
  const json = (v) => {
    if (v !== undefined) parts.push(typeof v === 'string' ? v : JSON.stringify(v));
  };
  if (format === 'anthropic') {
    const blocks = (list) => {
      for (const b of list) {
        switch (b?.type) {
          case 'text':
            text(b.text);
            break;
          case 'thinking':
            text(b.thinking);
            break;
          case 'redacted_thinking':
            text(b.data);
            break;
          case 'image':
            media.image++;
            break;
          case 'document':
            if (b.source?.type === 'text') text(b.source.data);
            else if (b.source?.type === 'content' && Array.isArray(b.source.content)) blocks(b.source.content);
            else media.document++;
            break;
          case 'tool_use':
          case 'server_tool_use':
          case 'mcp_tool_use':
            text(b.name);
            json(b.input);
            break;
          case 'tool_result':
            if (typeof b.content === 'string') text(b.content);
            else if (Array.isArray(b.content)) blocks(b.content);
            break;
          default:
            json(b);
        }
      }
    };
    if (typeof message.content === 'string') text(message.content);
    else blocks(message.content ?? []);
  } else {
    const m = message;
    text(m.name);
    text(m.refusal);
    text(m.reasoning_content);
    text(m.reasoning);
    if (typeof m.content === 'string') text(m.content);
    else if (Array.isArray(m.content)) {
      for (const p of m.content) {
        if (p.type === 'text') text(p.text);
        else if (p.type === 'refusal') text(p.refusal);
        else if (p.type === 'image_url') media.image++;
        else if (p.type === 'input_audio') media.audio++;
        else if (p.type === 'file') media.document++;
        else json(p);
      }
    }
    for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
      const fn = c.function ?? c.custom;
      text(fn?.name);
      text(fn?.arguments);
      text(fn?.input);
    }
    if (m.function_call && typeof m.function_call === 'object') {
      text(m.function_call.name);
      text(m.function_call.arguments);
    }
  }
  return { text: parts.join('\n'), media };
}

const tokensOfText = (s) => (s ? o200k(s, AS_TEXT) : 0);

/** A per-message counter memoized on the message's JSON text. */
export function makeCounter(format) {
  const memo = new Map();
  const rates = MEDIA[format];
  return (key, message) => {
    let n = memo.get(key);
    if (n === undefined) {
      const c = countable(format, message ?? JSON.parse(key));
      n =
        tokensOfText(c.text) +
        c.media.image * rates.image +
        c.media.document * rates.document +
        c.media.audio * rates.audio +
        PER_MESSAGE;
      memo.set(key, n);
    }
    return n;
  };
}

/** Tokens that precede the messages on every call and never change: system, tools, request framing. */
export function fixedTokens(run) {
  let n = PER_REQUEST;
  if (run.system !== undefined) {
    const s =
      typeof run.system === 'string'
        ? run.system
        : Array.isArray(run.system)
          ? run.system.map((b) => (typeof b?.text === 'string' ? b.text : JSON.stringify(b))).join('\n')
          : JSON.stringify(run.system);
    n += tokensOfText(s) + PER_MESSAGE;
  }
  if (Array.isArray(run.tools) && run.tools.length) n += tokensOfText(JSON.stringify(run.tools));
  return n;
}
