import fc from 'fast-check';

/**
 * Shapes of text that made a pass over user content superlinear somewhere (a security trial on
 * ordinary tool output): long runs of one character class, alternations that no single class
 * covers, repeated URL and path prefixes, blobs. A shape is data, so fast-check prints it on a
 * failure; `build` turns it into a string of any size, deterministically.
 */
export type Shape =
  | { kind: 'repeat'; unit: string }
  | { kind: 'random'; alphabet: string[]; seed: number }
  | { kind: 'mixed'; units: string[]; seed: number };

/** A run of one character, of every class the tokenizers and the fact extractor tell apart. */
const RUN_CHARS = [
  'a',
  'Z',
  '_',
  '7',
  '٣',
  ' ',
  '\n',
  '\t',
  '\u00a0',
  '\u3000',
  '.',
  '/',
  '-',
  '"',
  '—',
  'é',
  '日',
  'ア',
  '😀',
  '\u0301',
  '\u200d',
  '\ud800',
];

/** A non-ASCII character and a punctuation mark, alternating: one run for the pre-tokenizers. */
const WIDE = ['—', '😀', '日', 'é', '\u0301', '€', '→', '\u3000', '🧑‍💻', '\u00a0'];
const PUNCT = ['.', '-', '/', ',', '!', '\n', ' ', "'", '\r\n'];

/** Repeated prefixes and separators that make a backtracking pattern retry from every position. */
const PATTERNS = [
  'a-',
  'a/',
  './a/',
  'a.',
  'A_',
  'Aa',
  'AError',
  'a1',
  '1.',
  '1 ',
  '12 m',
  'http://',
  'https://a.',
  'http:/',
  'call_',
  'deadbeef-',
  '\n/',
  '.\n/',
  ' \n',
  "'s",
  '[compactor:',
  '{args.',
  '&<>',
];

/** Minified JavaScript: no whitespace, every delimiter a fact extractor might split on. */
const MINIFIED =
  '!function(e,t){"use strict";var n=e.a||{},r=t/2*(n.b-1);return r>0?n["c"]:e.d(`x`+r)}(window,3.5e2);var o=require("./lib/a.js");';

const alphabet = (chars: string) => [...chars];
const BASE64 = alphabet('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const HEX = alphabet('0123456789abcdef');
const CJK = alphabet(
  '日本語中文字漢汉的一是不了人我在有他这为之大来以个上们到说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心她本前开但因只从想实',
);
const EMOJI = ['😀', '🎉', '👍🏽', '❤️', '🧑‍💻', '🇫🇷', '✨'];
const JS = alphabet('abcdefghijklmnopqrstuvwxyzABCDEF0123456789(){}[];,.=+-*/!&|?:<>"\'_$`');

export interface Family {
  shapes: fc.Arbitrary<Shape>;
  /** Shapes always checked (those known to have been quadratic), before the generated ones. */
  examples: Shape[];
}

const repeat = (...units: string[]): Shape[] => units.map((unit) => ({ kind: 'repeat', unit }));

/** Every family: an arbitrary of shapes and the examples always checked. */
export const FAMILIES: Record<string, Family> = {
  'run of one character': {
    shapes: fc.constantFrom(...RUN_CHARS).map((unit) => ({ kind: 'repeat', unit })),
    examples: repeat('a', '日'),
  },
  'non-ASCII and punctuation alternating': {
    shapes: fc.tuple(fc.constantFrom(...WIDE), fc.constantFrom(...PUNCT)).map(([a, b]) => ({ kind: 'repeat', unit: a + b })),
    examples: repeat('—.', '😀.', '\u0301.'),
  },
  'repeated prefix': {
    shapes: fc.constantFrom(...PATTERNS).map((unit) => ({ kind: 'repeat', unit })),
    examples: repeat('a-', 'a/', 'http://', '\n/'),
  },
  'base64 blob': { shapes: fc.integer().map((seed) => ({ kind: 'random', alphabet: BASE64, seed })), examples: [] },
  'hex blob': { shapes: fc.integer().map((seed) => ({ kind: 'random', alphabet: HEX, seed })), examples: [] },
  'minified JavaScript': {
    shapes: fc.integer().map((seed) => ({ kind: 'random', alphabet: JS, seed })),
    examples: repeat(MINIFIED),
  },
  'CJK without spaces': { shapes: fc.integer().map((seed) => ({ kind: 'random', alphabet: CJK, seed })), examples: [] },
  emoji: { shapes: fc.integer().map((seed) => ({ kind: 'random', alphabet: EMOJI, seed })), examples: [] },
  mixed: {
    shapes: fc
      .tuple(fc.integer(), fc.array(fc.constantFrom(...RUN_CHARS, ...PATTERNS, MINIFIED), { minLength: 2, maxLength: 6 }))
      .map(([seed, units]) => ({ kind: 'mixed', units, seed })),
    examples: [],
  },
};

/** A small deterministic generator (mulberry32): the same shape and size give the same string. */
function random(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const MIXED_BLOCK = 16 * 1024;

/** The shape as a string of about `size` UTF-16 code units (never fewer). */
export function build(shape: Shape, size: number): string {
  if (shape.kind === 'repeat') return shape.unit.repeat(Math.ceil(size / shape.unit.length));
  const next = random(shape.seed);
  const parts: string[] = [];
  let length = 0;
  if (shape.kind === 'random') {
    const chars = shape.alphabet;
    while (length < size) {
      const c = chars[Math.floor(next() * chars.length)] as string;
      parts.push(c);
      length += c.length;
    }
    return parts.join('');
  }
  // Mixed: a block of runs of each unit, in a random order, repeated, so that every size has the
  // same mix (a pass's cost per character differs from one unit to another).
  while (length < MIXED_BLOCK) {
    const unit = shape.units[Math.floor(next() * shape.units.length)] as string;
    const run = unit.repeat(1 + Math.floor(next() * (1024 / unit.length)));
    parts.push(run);
    length += run.length;
  }
  const block = parts.join('');
  return block.repeat(Math.ceil(size / block.length));
}
