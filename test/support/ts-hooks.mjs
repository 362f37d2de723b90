// Module hooks that run the repository's TypeScript (src/, test/) under Node without a build, for
// the test runner (see ts-loader.mjs, which registers them). The compiling and its cache are in
// ts-cache.mjs: the fast lane runs each test file in a process of its own, and compiling src/ again
// in every one of them was most of its time.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { compiled } from './ts-cache.mjs';

const TYPESCRIPT = /\.m?ts$/;

/**
 * Sources import each other by their emitted names (`./x.js` for ./x.ts), as NodeNext asks: a
 * relative `.js` import from a TypeScript file is the `.ts` beside it when that exists (looked up
 * first: letting Node fail on the `.js` first costs an error per import, hundreds per process).
 */
export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL;
  if (parent?.startsWith('file:') && TYPESCRIPT.test(parent) && /^\.{1,2}\/.*\.m?js$/.test(specifier)) {
    const url = new URL(specifier.replace(/js$/, 'ts'), parent);
    if (existsSync(url)) return { url: url.href, format: 'module', shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !TYPESCRIPT.test(url) || url.includes('/node_modules/')) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const source = await readFile(file, 'utf8');
  return { format: 'module', source: compiled(file, source), shortCircuit: true };
}
