// Runs the repository's TypeScript under Node: `node --import ./test/support/ts-loader.mjs file.ts`.
// The test runner loads it in every test process (package.json, "tap": "node-arg"); the hooks and
// why they cache their output are in ts-hooks.mjs.
import { register } from 'node:module';

register('./ts-hooks.mjs', import.meta.url);

// Stack traces name the .ts lines (the compiled files carry their source maps).
process.setSourceMapsEnabled(true);
