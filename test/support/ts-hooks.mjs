// Module hooks that run the repository's TypeScript (src/, test/) under Node without a build, for
// the test runner (see ts-loader.mjs, which registers them). The compiling and its cache are in
// ts-cache.mjs: the fast lane runs each test file in a process of its own, and compiling src/ again
// in every one of them was most of its time.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { compiled } from './ts-cache.mjs';

const TYPESCRIPT = /\.m?ts$/;

/** Sources import each other by their emitted names (`./x.js` for ./x.ts), as NodeNext asks. */
export async function resolve(specifier, context, nextResolve) {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    const fromTypeScript = context.parentURL?.startsWith('file:') && TYPESCRIPT.test(context.parentURL);
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !fromTypeScript || !/^\.{1,2}\/.*\.m?js$/.test(specifier)) throw error;
    return nextResolve(specifier.replace(/js$/, 'ts'), context);
  }
}

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !TYPESCRIPT.test(url) || url.includes('/node_modules/')) return nextLoad(url, context);
  const file = fileURLToPath(url);
  const source = await readFile(file, 'utf8');
  return { format: 'module', source: compiled(file, source), shortCircuit: true };
}
