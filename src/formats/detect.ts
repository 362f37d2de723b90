import { CompactorError } from '../errors.js';
import type { FormatAdapter } from '../history/format.js';
import { DEFAULT_FORMAT, FORMATS } from './registry.js';

interface Scan {
  format: FormatAdapter;
  firstYes: number;
  firstNo: number;
}

/**
 * Detects a history's format from its shapes (docs/formats.md, "Detection"). A format is a candidate when
 * every message fits it; among candidates, the one with a distinctive message wins, and a history
 * of plain text that several formats accept is read as `openai-chat`. A history that fits no
 * format, or mixes two, is a 400 naming the first offending message.
 */
export function detectFormat(messages: readonly unknown[]): FormatAdapter {
  const scans: Scan[] = FORMATS.map((format) => {
    let firstYes = -1;
    let firstNo = -1;
    for (let i = 0; i < messages.length && firstNo === -1; i++) {
      const fit = format.classify(messages[i]);
      if (fit === 'no') firstNo = i;
      else if (fit === 'yes' && firstYes === -1) firstYes = i;
    }
    return { format, firstYes, firstNo };
  });
  const candidates = scans.filter((s) => s.firstNo === -1);
  const distinctive = candidates.filter((s) => s.firstYes !== -1);
  if (distinctive.length === 1) return (distinctive[0] as Scan).format;
  if (distinctive.length === 0 && candidates.some((s) => s.format === DEFAULT_FORMAT)) return DEFAULT_FORMAT;
  if (candidates.length === 1) return (candidates[0] as Scan).format;
  if (distinctive.length > 1) {
    throw new CompactorError(
      'CMP_ERR_FORMAT_MIXED',
      `the history is ambiguous between ${distinctive.map((s) => s.format.name).join(' and ')}; set "format"`,
      [{ path: 'format', message: 'required for this history' }],
    );
  }
  // No format fits every message. Take the format that fits the longest prefix: its parser names
  // the exact field when the offending message is malformed; otherwise the history mixes formats.
  const best = [...scans].sort((a, b) => b.firstNo - a.firstNo)[0] as Scan;
  const path = `messages[${best.firstNo}]`;
  const fitsNone = scans.every((s) => s.format.classify(messages[best.firstNo]) === 'no');
  if (fitsNone) {
    best.format.parse(messages);
    throw new CompactorError(
      'CMP_ERR_FORMAT_UNDETECTED',
      `${path} fits none of the supported formats (${FORMATS.map((f) => f.name).join(', ')})`,
      [{ path, message: 'not a message of any supported format' }],
    );
  }
  throw new CompactorError(
    'CMP_ERR_FORMAT_MIXED',
    `${path} does not fit ${best.format.name}, the format of the messages before it: a history must use one format`,
    [{ path, message: `not a ${best.format.name} message` }],
  );
}
