import { spawnSync } from 'node:child_process';
import t from 'tap';

/**
 * The Python client as a user gets it: clients/python/run-tests.sh pip-installs it into a fresh
 * virtual environment and runs its unittest suite against the service built from this checkout
 * (and a scripted 503-then-200 server). Part of the system lane (`npm run test:system`), which
 * runs every client's tests.
 */
const root = new URL('../../', import.meta.url).pathname;
const python = spawnSync('python3', ['-c', 'import venv, sys; print(sys.version_info >= (3, 9))'], { encoding: 'utf8' });

t.test(
  'clients/python: installed into a fresh venv, every test passes against the real service',
  { skip: python.stdout.trim() === 'True' ? false : 'python3 (3.9+, with venv) is not installed' },
  async (t) => {
    const run = spawnSync('bash', ['clients/python/run-tests.sh'], { cwd: root, encoding: 'utf8', timeout: 240_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    const ran = /Ran (\d+) tests?/.exec(output);
    t.equal(run.status, 0, `run-tests.sh exits 0${run.status ? `:\n${output.slice(-2000)}` : ''}`);
    t.ok(ran && Number(ran[1]) >= 10, `the unittest suite ran (${ran?.[1] ?? 0} tests)`);
    t.match(output, /\nOK/, 'unittest reports OK');
  },
);
