import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

// `npm run example:agent` with no account: the bundled fake model, Compactor started by the example.
const root = fileURLToPath(new URL('../../', import.meta.url));

t.test('examples/agent-loop.ts runs end to end without an account and fit reduces the history', async (t) => {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'COMPACTOR_URL', 'COMPACTOR_API_KEY', 'AGENT_MODEL'].includes(key),
    ),
  );
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['node_modules/tsx/dist/cli.mjs', 'examples/agent-loop.ts', 'Survey this repository.'],
    { cwd: root, env, timeout: 300_000 },
  );
  t.match(stdout, /Compactor started at http:\/\/127\.0\.0\.1:\d+/, 'started Compactor itself');
  t.match(stdout, /using the bundled fake model/);
  t.match(stdout, /the model calls bash/, 'the model made tool calls');
  t.match(stdout, /^answer: Done after 7 tool calls/m, 'the loop finished with the answer');
  const summary = stdout.match(/fit was called (\d+) times and reduced the history (\d+) times/);
  t.ok(summary, 'printed what fit did');
  t.equal(Number(summary?.[1]), 8, 'fit before every model call');
  t.ok(Number(summary?.[2]) >= 1, 'fit reduced the history at least once');
  for (const [, before, after] of stdout.matchAll(/^ {2}(\d+) -> (\d+) tokens/gm)) {
    t.ok(Number(after) < Number(before), `${before} -> ${after} tokens`);
  }
});
