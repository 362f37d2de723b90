import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error: a plain ES module script without types
import { docFiles } from '../../scripts/readme-options.mjs';

/**
 * The documentation as the tests read it: the README (the front page), CONTRIBUTING.md and every
 * file under docs/. Each table and runnable example lives in one of them; `docIn` finds which.
 */
export const root = new URL('../../', import.meta.url).pathname;

/** The documentation files, relative to the repository's root: README.md first. */
export const DOC_FILES: readonly string[] = docFiles(new URL(`file://${root}`));

export function readDoc(file: string): string {
  return readFileSync(join(root, file), 'utf8');
}

/** A shell block that talks to the service, with the ```text block right after it, if any. */
export interface Block {
  kind: 'block';
  line: number;
  script: string;
  expected?: string[];
}

/**
 * A figure written in prose, checked like an output block: `<!-- figure [about] N [±P%]: command -->`
 * right after the paragraph that states N. The paragraph must state N as written (`1,820`), and the
 * command, run where the marker stands, must print a number within P% of it (exactly N without P).
 */
export interface Figure {
  kind: 'figure';
  line: number;
  written: string;
  value: number;
  tolerance: number;
  script: string;
  paragraph: string;
}

export type Step = Block | Figure;

const FIGURE = /^<!-- figure (?:about )?([\d,.]+)(?: ±([\d.]+)%)?: ([\s\S]*?) -->$/;

/** The paragraph (lines since the last blank one) that ends right before `index`. */
function paragraphBefore(text: string, index: number): string {
  const before = text.slice(0, index).trimEnd();
  const start = before.lastIndexOf('\n\n');
  return before.slice(start < 0 ? 0 : start + 2);
}

/** A document's runnable steps, in document order: service-addressing shell blocks and figures. */
export function steps(text: string): Step[] {
  const out: Step[] = [];
  const token = /```(\w*)\n([\s\S]*?)```|^<!-- figure [^\n]*-->$/gm;
  let prev: Block | undefined;
  let prevEnd = 0;
  for (let m = token.exec(text); m; m = token.exec(text)) {
    const [whole, lang, body = ''] = m;
    const line = text.slice(0, m.index).split('\n').length;
    const between = text.slice(prevEnd, m.index);
    prevEnd = m.index + whole.length;
    if (whole.startsWith('<!--')) {
      const f = FIGURE.exec(whole);
      if (!f) throw new Error(`line ${line}: a figure marker reads <!-- figure [about] N [±P%]: command -->`);
      const [, written = '', tolerance = '0', script = ''] = f;
      const paragraph = paragraphBefore(text, m.index);
      out.push({
        kind: 'figure',
        line,
        written,
        value: Number(written.replaceAll(',', '')),
        tolerance: Number(tolerance),
        script,
        paragraph,
      });
      prev = undefined;
      continue;
    }
    if (lang === 'text' && prev && between.trim() === '') prev.expected = body.trimEnd().split('\n');
    prev = undefined;
    if (lang === 'sh' && body.includes('localhost:8080')) {
      prev = { kind: 'block', line, script: body };
      out.push(prev);
    }
  }
  return out;
}

/** Whether a printed figure is the one the prose states, within its tolerance. */
export function figureHolds(figure: Figure, printed: string): boolean {
  const text = printed.trim();
  const got = Number(text);
  if (text === '' || !Number.isFinite(got)) return false;
  return Math.abs(got - figure.value) <= (figure.value * figure.tolerance) / 100;
}

/** The file among the docs that holds a line equal to `line` (a table's header), or undefined. */
export function docWith(line: string): string | undefined {
  return DOC_FILES.find((file) => readDoc(file).split('\n').includes(line));
}
