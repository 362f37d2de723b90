// The compiled form of the repository's TypeScript for the tests (see ts-hooks.mjs): each file is
// compiled by TypeScript's own transpileModule with the options of the root tsconfig.json (the same
// emit as `tsc`), with an inline source map to the .ts file, so coverage maps to src/*.ts exactly as
// the built dist/ does. The map names the file instead of carrying its text: coverage reads the
// .ts from disk, and every test process decodes less. The output is kept in
// node_modules/.cache/compactor-ts, keyed by the file's path and text, TypeScript's version, the
// tsconfig and this file, so a test process loads typescript only for a file that changed.
//   node test/support/ts-cache.mjs   compiles every .ts under src/ and test/ into the cache, and
//                                    removes the entries none of them uses that are a day old
// `npm test` runs that beside the type-check and the build, so that no test process (the fast lane
// runs each file in a process of its own) loads TypeScript, about a second each.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(join(root, 'package.json'));
const tsconfigPath = join(root, 'tsconfig.json');
const cacheDir = join(root, 'node_modules/.cache/compactor-ts');

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
      inlineSources: false,
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

/** Where the compiled text of this file with this text is kept. */
function cachePath(file, source) {
  const key = createHash('sha256').update(salt).update(file).update('\0').update(source).digest('hex');
  return join(cacheDir, `${key}.js`);
}

/** The compiled text of one file, from the cache when its text was compiled before. */
export function compiled(file, source) {
  const cached = cachePath(file, source);
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

/** Every .ts file under a folder (not .d.ts). */
function* typescriptFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typescriptFiles(path);
    else if (/\.m?ts$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const used = new Set();
  for (const dir of ['src', 'test']) {
    for (const file of typescriptFiles(join(root, dir))) {
      const source = readFileSync(file, 'utf8');
      compiled(file, source);
      used.add(cachePath(file, source));
    }
  }
  // Older versions of these files (edits, other branches) and files compiled on demand elsewhere:
  // kept a day, so that switching branches back and forth does not compile everything again.
  let removed = 0;
  for (const name of readdirSync(cacheDir)) {
    const path = join(cacheDir, name);
    try {
      if (!used.has(path) && Date.now() - statSync(path).mtimeMs > 24 * 3600 * 1000) {
        unlinkSync(path);
        removed++;
      }
    } catch {
      // Removed by another process meanwhile.
    }
  }
  console.log(
    `# ${used.size} TypeScript files compiled for the tests, ${removed} stale entries removed (node_modules/.cache/compactor-ts)`,
  );
}
