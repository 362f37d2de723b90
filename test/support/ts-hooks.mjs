// Module hooks that run the repository's TypeScript (src/, test/) under Node without a build, for
// the test runner (see ts-loader.mjs, which registers them). Each file is compiled by TypeScript's
// own transpileModule with the options of the root tsconfig.json (the same emit as `tsc` and as ts-node,
// which tap used before), with an inline source map to the .ts file, so coverage maps to src/*.ts
// exactly as the built dist/ does. The output is kept in node_modules/.cache/compactor-ts, keyed by
// the file's path and text, TypeScript's version, the tsconfig and this file, so a test process
// loads typescript only for a file that changed: the fast lane runs each test file in a process of
// its own, and compiling src/ again in every one of them was most of its time.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(join(root, 'package.json'));
const tsconfigPath = join(root, 'tsconfig.json');
const cacheDir = join(root, 'node_modules/.cache/compactor-ts');
const TYPESCRIPT = /\.m?ts$/;

/** What every cached output depends on besides its own file: a change to any of them recompiles. */
const salt = createHash('sha256')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .update(readFileSync(tsconfigPath))
  .update(readFileSync(require.resolve('typescript/package.json')))
  .digest('hex');

let compilerOptions;

/** TypeScript's emit for one file, with the source map inline (loads typescript on first use). */
function compile(file, source) {
  const ts = require('typescript');
  if (!compilerOptions) {
    const { config } = ts.readConfigFile(tsconfigPath, ts.sys.readFile);
    compilerOptions = {
      ...ts.convertCompilerOptionsFromJson(config.compilerOptions, root).options,
      module: ts.ModuleKind.ESNext,
      sourceMap: true,
      inlineSourceMap: false,
      inlineSources: true,
      declaration: false,
      declarationMap: false,
      noEmit: false,
    };
  }
  const out = ts.transpileModule(source, { fileName: file, compilerOptions });
  const map = JSON.parse(out.sourceMapText);
  map.file = file;
  map.sources = [pathToFileURL(file).href];
  map.sourceRoot = '';
  const code = out.outputText.replace(/\n\/\/# sourceMappingURL=.*\s*$/, '\n');
  return `${code}//# sourceMappingURL=data:application/json;charset=utf-8;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
}

/** The compiled text of one file, from the cache when its text was compiled before. */
function compiled(file, source) {
  const key = createHash('sha256').update(salt).update(file).update('\0').update(source).digest('hex');
  const cached = join(cacheDir, `${key}.js`);
  try {
    return readFileSync(cached, 'utf8');
  } catch {
    const code = compile(file, source);
    // Written beside and renamed: test processes run in parallel and may compile the same file.
    const temp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
    try {
      mkdirSync(cacheDir, { recursive: true });
      writeFileSync(temp, code);
      renameSync(temp, cached);
    } catch {
      // A cache that cannot be written only costs the next process a compile.
    }
    return code;
  }
}

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
