import type { FormatAdapter } from '../history/format.js';
import { anthropic } from './anthropic.js';
import { gemini } from './gemini.js';
import { openaiChat } from './openai-chat.js';
import { openaiResponses } from './openai-responses.js';

/**
 * Every supported wire format. The request schemas' `format` enum and detection are derived from
 * this list: adding a format is one adapter file and one line here.
 */
export const FORMATS = [openaiChat, anthropic, openaiResponses, gemini] as const satisfies readonly FormatAdapter[];

export type FormatName = (typeof FORMATS)[number]['name'];

export const FORMAT_NAMES = FORMATS.map((f) => f.name) as [string, ...string[]];

/** The format that plain-text histories, which several formats accept, are read as. */
export const DEFAULT_FORMAT = openaiChat;

export function formatByName(name: string): FormatAdapter | undefined {
  return FORMATS.find((f) => f.name === name);
}
