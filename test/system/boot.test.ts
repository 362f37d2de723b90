/**
 * Every way boot can fail, through the real process (`node dist/server.js`, built by `npm test`):
 * a configuration error exits 78 (EX_CONFIG) by itself, naming the variable and its value
 * (a Redis password redacted); an operational fault (a store that does not answer, a port in use)
 * exits 1 with a clear message. Each run has a deadline, so a hang fails its test, not the suite.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { freePort } from '../support/net.js';

const root = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'compactor-boot-'));
chmodSync(dir, 0o755);
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** Permission checks mean nothing to root: the read-only cases run the process as nobody. */
const canBeNobody = process.getuid?.() === 0 && spawnSync('true', { uid: 65534, gid: 65534 }).status === 0;
const readable = (path: string) => spawnSync('test', ['-r', path], { uid: 65534, gid: 65534 }).status === 0;

/**
 * Where nobody runs the service from. nobody cannot enter a root user's 0700 home or a `mktemp -d`
 * folder, so a clone there is given a copy nobody can read: hard links (a copy where they fail) of
 * dist/, node_modules/ and package.json in a world-readable folder.
 */
function nobodyRoot(): { cwd?: string; reason?: string } {
  if (!canBeNobody) return { reason: 'running as root, and cannot switch to nobody' };
  if (readable(join(root, 'dist/server.js'))) return { cwd: root };
  const copy = join(dir, 'app');
  mkdirSync(copy);
  for (const part of ['dist', 'node_modules', 'package.json']) {
    const from = join(root, part);
    if (spawnSync('cp', ['-al', from, copy]).status !== 0) spawnSync('cp', ['-a', from, copy]);
  }
  if (readable(join(copy, 'dist/server.js'))) return { cwd: copy };
  return { reason: `nobody (uid 65534) cannot read ${root} nor a copy of it in ${copy}` };
}
const asNobody = process.getuid?.() === 0 ? nobodyRoot() : { reason: 'not root: permissions apply already' };
const unprivileged = process.getuid?.() !== 0 || asNobody.cwd !== undefined;

interface Run {
  code: number | null;
  stderr: string;
  ms: number;
  /** Killed at its deadline: a hang. */
  killed: boolean;
  deadlineMs: number;
}

/**
 * No wall-clock limit: a slow or busy machine must pass. A hang is a process that does not exit by
 * itself before a deadline of 30 s plus 20 times what this machine, in this run, takes to start the
 * service and refuse a configuration error found before anything else (PORT=x).
 */
let baseline: Promise<number> | undefined;
function plainRefusalMs(): Promise<number> {
  baseline ??= boot({ PORT: 'x' }, { deadlineMs: 300_000 }).then((run) => run.ms);
  return baseline;
}

/** Boots the server with `env` and waits for it to exit; kills it as a hang after the deadline. */
async function boot(env: Record<string, string>, options: { deadlineMs?: number; nobody?: boolean } = {}): Promise<Run> {
  const deadlineMs = options.deadlineMs ?? 30_000 + 20 * (await plainRefusalMs());
  const started = Date.now();
  const nobody = options.nobody ? asNobody.cwd : undefined;
  // tap's process tracker rides in NODE_OPTIONS and writes under .tap/ at exit, which nobody may not.
  const [command, args] = nobody
    ? ['/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, 'dist/server.js']]
    : [process.execPath, ['dist/server.js']];
  const child: ChildProcess = spawn(command, args, {
    cwd: nobody ?? root,
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', PORT: '0', COMPACTOR_STORE_URL: 'memory:', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
    ...(nobody ? { uid: 65534, gid: 65534 } : {}),
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let killed = false;
  const deadline = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, deadlineMs);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(deadline);
  return { code, stderr, ms: Date.now() - started, killed, deadlineMs };
}

/** Exited by itself, not killed at its deadline as a hang. */
function notAHang(t: Test, run: Run) {
  t.notOk(run.killed, `exits by itself, not a hang (${run.ms} ms; killed as a hang after ${run.deadlineMs} ms)`);
}

/** Asserts a configuration error: exit 78, quickly, naming the variable and matching `detail`. */
async function configError(t: Test, env: Record<string, string>, variable: string, detail: RegExp, nobody = false) {
  const run = await boot(env, { nobody });
  t.equal(run.code, 78, `exit 78 (EX_CONFIG), not ${run.code}: ${run.stderr}`);
  t.match(run.stderr, new RegExp(`invalid configuration: ${variable}=`), `names ${variable}`);
  t.match(run.stderr, detail);
  notAHang(t, run);
}

t.test('sqlite: every unusable path is a configuration error naming COMPACTOR_STORE_URL and the path', { jobs: 3 }, async (t) => {
  mkdirSync(join(dir, 'folder.db'));
  writeFileSync(join(dir, 'not-a-db.db'), 'this is not a SQLite database, just text\n'.repeat(100));
  writeFileSync(join(dir, 'a-file'), 'x');
  t.test('a path that is a folder', (t) =>
    configError(
      t,
      { COMPACTOR_STORE_URL: `sqlite:${dir}/folder.db` },
      'COMPACTOR_STORE_URL',
      /folder\.db: it is a folder, not a database file/,
    ),
  );
  t.test('a file that is not a database', (t) =>
    configError(
      t,
      { COMPACTOR_STORE_URL: `sqlite:${dir}/not-a-db.db` },
      'COMPACTOR_STORE_URL',
      /not-a-db\.db".*corrupt \(its file is not a readable SQLite database\)/,
    ),
  );
  t.test('a folder under /proc: refused at once, not a hang', (t) =>
    configError(
      t,
      { COMPACTOR_STORE_URL: 'sqlite:/proc/self/x/y.db' },
      'COMPACTOR_STORE_URL',
      /cannot create its folder \/proc\/self\/x \(ENOENT\)/,
    ),
  );
  t.test('a parent that is a file', (t) =>
    configError(t, { COMPACTOR_STORE_URL: `sqlite:${dir}/a-file/sub/c.db` }, 'COMPACTOR_STORE_URL', /a-file is a file/),
  );
  t.test('read-only folder and file', { skip: unprivileged ? false : (asNobody.reason ?? 'cannot run as nobody') }, async (t) => {
    const ro = join(dir, 'read-only');
    mkdirSync(join(ro, 'inner'), { recursive: true });
    const made = await boot({ COMPACTOR_STORE_URL: `sqlite:${ro}/inner/made.db`, PORT: 'x' });
    t.equal(made.code, 78, 'PORT=x stops the boot before the store opens');
    chmodSync(join(ro, 'inner'), 0o555);
    chmodSync(ro, 0o555);
    await configError(
      t,
      { COMPACTOR_STORE_URL: `sqlite:${ro}/inner/c.db` },
      'COMPACTOR_STORE_URL',
      /is read-only \(the folder .*inner is not writable\)/,
      true,
    );
    await configError(
      t,
      { COMPACTOR_STORE_URL: `sqlite:${ro}/new/c.db` },
      'COMPACTOR_STORE_URL',
      /cannot create its folder .*read-only\/new \(EACCES\)/,
      true,
    );
    const file = join(dir, 'ro-file');
    mkdirSync(file);
    chmodSync(file, 0o777);
    spawnSync(
      process.execPath,
      ['-e', `new (require('better-sqlite3'))(${JSON.stringify(join(file, 'c.db'))}).exec('create table x (y)')`],
      { cwd: root },
    );
    chmodSync(join(file, 'c.db'), 0o444);
    await configError(
      t,
      { COMPACTOR_STORE_URL: `sqlite:${file}/c.db` },
      'COMPACTOR_STORE_URL',
      /is read-only \(the file .*c\.db is not writable\)/,
      true,
    );
  });
});

const hasRedis = spawnSync('redis-server', ['--version']).status === 0;

t.test(
  'redis: a URL, password or ACL that is wrong is configuration; a Redis that does not answer is not',
  { jobs: 3 },
  async (t) => {
    t.test('an unparsable URL: 78, its password redacted', async (t) => {
      await configError(
        t,
        { COMPACTOR_STORE_URL: 'redis://:hunter2@[not-a-host' },
        'COMPACTOR_STORE_URL',
        /"redis:\/\/:\*\*\*@\[not-a-host": not a valid Redis URL/,
      );
    });
    t.test('refused connections: exit 1 by itself, the URL redacted', async (t) => {
      const run = await boot({ COMPACTOR_STORE_URL: `redis://user:hunter2@127.0.0.1:${await freePort()}/0` });
      t.equal(run.code, 1, run.stderr);
      t.match(
        run.stderr,
        /cannot start: COMPACTOR_STORE_URL="redis:\/\/user:\*\*\*@127\.0\.0\.1:\d+\/0": the redis artifact store cannot be reached \(ECONNREFUSED\); not a configuration error/,
      );
      t.notMatch(run.stderr, /hunter2/);
    });
    t.test('a Redis that accepts connections and never answers: exit 1, bounded', async (t) => {
      const silent: Server = createServer(() => {});
      silent.listen(0, '127.0.0.1');
      await once(silent, 'listening');
      t.teardown(() => silent.close());
      const address = silent.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const run = await boot({ COMPACTOR_STORE_URL: `redis://127.0.0.1:${port}/0` });
      t.equal(run.code, 1, run.stderr);
      t.match(run.stderr, /COMPACTOR_STORE_URL=.*(did not answer in time|cannot be reached)/);
      notAHang(t, run);
    });
    t.test(
      'wrong password, or a user not allowed to keep the secret: 78',
      { skip: hasRedis ? false : 'redis-server is not installed' },
      async (t) => {
        const port = await freePort();
        const redis = spawn(
          'redis-server',
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            '--save',
            '',
            '--appendonly',
            'no',
            '--requirepass',
            'hunter2',
            '--user',
            'prober',
            'on',
            '>probe-pw',
            '~compactor:probe',
            '+@all',
          ],
          { stdio: 'ignore' },
        );
        t.teardown(() => redis.kill('SIGKILL'));
        for (let i = 0; i < 1200 && spawnSync('redis-cli', ['-p', String(port), 'ping']).status !== 0; i++)
          await new Promise((r) => setTimeout(r, 100));
        await configError(
          t,
          { COMPACTOR_STORE_URL: `redis://:wrong-pw@127.0.0.1:${port}/0` },
          'COMPACTOR_STORE_URL',
          /"redis:\/\/:\*\*\*@127.*refuses the credentials/,
        );
        const secret = await boot({ COMPACTOR_STORE_URL: `redis://prober:probe-pw@127.0.0.1:${port}/0` });
        t.equal(secret.code, 78, secret.stderr);
        t.match(
          secret.stderr,
          /COMPACTOR_STORE_URL="redis:\/\/prober:\*\*\*@.*refuses access.*while reading the installation secret/,
        );
        t.notMatch(secret.stderr, /probe-pw|hunter2/);
        const http = await freePort();
        const ok = spawn(process.execPath, ['dist/server.js'], {
          cwd: root,
          env: { PATH: process.env.PATH ?? '', PORT: String(http), COMPACTOR_STORE_URL: `redis://:hunter2@127.0.0.1:${port}/0` },
          stdio: 'ignore',
        });
        t.teardown(() => ok.kill('SIGKILL'));
        let ready = 0;
        // Polled to a generous deadline (120 s): a busy machine boots late, not never.
        for (let i = 0; i < 1200 && ready !== 200 && ok.exitCode === null; i++) {
          ready = await fetch(`http://127.0.0.1:${http}/health/ready`).then(
            (r) => r.status,
            () => 0,
          );
          if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
        }
        t.equal(ready, 200, 'with the right password it boots, and is ready');
      },
    );
  },
);

t.test('the rest of the environment: LLM URL, secret, listen address', { jobs: 3 }, async (t) => {
  t.test('OPENAI_BASE_URL must be http(s)', (t) =>
    configError(
      t,
      { OPENAI_BASE_URL: 'file:///etc/passwd', COMPACTOR_SUMMARIZER_MODEL: 'm' },
      'OPENAI_BASE_URL',
      /expected an http:\/\/ or https:\/\/ URL/,
    ),
  );
  t.test('a short COMPACTOR_ARTIFACT_SECRET, redacted', async (t) => {
    await configError(
      t,
      { COMPACTOR_ARTIFACT_SECRET: 'too-short' },
      'COMPACTOR_ARTIFACT_SECRET',
      /\(redacted\): must be at least 32 characters/,
    );
  });
  t.test('a key list that trims to nothing (a template never filled in) does not boot an open service', (t) =>
    configError(t, { COMPACTOR_API_KEYS: ',' }, 'COMPACTOR_API_KEYS', /\(redacted\): lists no key/),
  );
  t.test('a short key', (t) =>
    configError(t, { COMPACTOR_API_KEYS: 'short' }, 'COMPACTOR_API_KEYS', /key 1 of 1 has 5 characters; at least 16/),
  );
  t.test('a hex number', (t) => configError(t, { COMPACTOR_WORKERS: '0x2' }, 'COMPACTOR_WORKERS', /decimal digits/));
  t.test('a price file that is a device is refused at once, not read', (t) =>
    configError(t, { COMPACTOR_PRICES_FILE: '/dev/zero' }, 'COMPACTOR_PRICES_FILE', /not a regular file \(a character device\)/),
  );
  t.test('an unknown COMPACTOR_* name, with the closest known one', async (t) => {
    const run = await boot({ COMPACTOR_STORE_MAX_BYTE: '1000' });
    t.equal(run.code, 78, run.stderr);
    t.match(run.stderr, /COMPACTOR_STORE_MAX_BYTE is not a configuration variable \(did you mean COMPACTOR_STORE_MAX_BYTES\?\)/);
  });
  t.test('a HOST that is not an address of this machine', (t) =>
    configError(t, { HOST: '192.0.2.1' }, 'HOST', /HOST is not an address of this machine \(EADDRNOTAVAIL\)/),
  );
  t.test('a port in use: exit 1 (not configuration), naming it', async (t) => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    t.teardown(() => taken.close());
    const address = taken.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const run = await boot({ PORT: String(port) });
    t.equal(run.code, 1, run.stderr);
    t.match(run.stderr, new RegExp(`cannot listen on HOST="127.0.0.1" PORT=${port}: the address is already in use`));
  });
});
