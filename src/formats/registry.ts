import type { FormatAdapter } from '../history/format.js';
import { anthropic } from './anthropic.js';
import { ANTHROPIC_SHAPES } from './anthropic-parse.js';
import { GEMINI_SHAPES, gemini } from './gemini.js';
import { openaiChat } from './openai-chat.js';
import { CHAT_SHAPES } from './openai-chat-parse.js';
import { openaiResponses } from './openai-responses.js';
import { RESPONSES_SHAPES } from './openai-responses-parse.js';
import { foreignTo } from './shapes.js';

/** Every format's own shapes: what is foreign to each is what the others declare. */
const DECLARED = [CHAT_SHAPES, ANTHROPIC_SHAPES, RESPONSES_SHAPES, GEMINI_SHAPES];
const foreign = (own: (typeof DECLARED)[number]) => foreignTo(own, DECLARED);

/**
 * Every supported wire format. The request schemas' `format` enum and detection are derived from
 * this list: adding a format is one adapter file and one line here.
 */
export const FORMATS = [
  openaiChat(foreign(CHAT_SHAPES)),
  anthropic(foreign(ANTHROPIC_SHAPES)),
  openaiResponses(foreign(RESPONSES_SHAPES)),
  gemini(foreign(GEMINI_SHAPES)),
] as const satisfies readonly FormatAdapter[];

export type FormatName = (typeof FORMATS)[number]['name'];

export const FORMAT_NAMES = FORMATS.map((f) => f.name) as [string, ...string[]];

/** The format that plain-text histories, which several formats accept, are read as. */
export const DEFAULT_FORMAT = FORMATS[0];

export function formatByName(name: string): FormatAdapter | undefined {
  return FORMATS.find((f) => f.name === name);
}
