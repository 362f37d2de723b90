import t from 'tap';
import { StoreHealth } from '../../src/store/health.js';
import { MemoryStore } from '../../src/store/memory.js';
import { classifyRedis } from '../../src/store/redis-faults.js';
import { classifySqlite, prepareFile } from '../../src/store/sqlite-faults.js';
import { type ArtifactStore, StoreFailedError, StoreUnavailableError } from '../../src/store/types.js';

const sqliteError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

t.test('SQLite failures: transient ones may be retried, permanent ones name the problem', async (t) => {
  const transient: [string, RegExp, number][] = [
    ['SQLITE_BUSY', /busy/, 1],
    ['SQLITE_BUSY_SNAPSHOT', /busy/, 1],
    ['SQLITE_LOCKED', /busy/, 1],
    ['SQLITE_FULL', /full \(no space left on its disk\)/, 30],
    ['SQLITE_IOERR_WRITE', /I\/O error/, 5],
  ];
  for (const [code, problem, after] of transient) {
    const fault = classifySqlite('write', sqliteError(code));
    t.type(fault, StoreUnavailableError, code);
    t.match(fault.problem, problem);
    t.equal((fault as StoreUnavailableError).retryAfterSeconds, after);
  }
  const permanent: [string, RegExp][] = [
    ['SQLITE_READONLY', /read-only/],
    ['SQLITE_READONLY_DIRECTORY', /read-only/],
    ['SQLITE_CORRUPT', /corrupt/],
    ['SQLITE_NOTADB', /corrupt/],
    ['SQLITE_CANTOPEN', /cannot open/],
    ['SQLITE_PERM', /permission denied/],
    ['SQLITE_ERROR', /failed \(SQLITE_ERROR\)/],
  ];
  for (const [code, problem] of permanent) {
    const fault = classifySqlite('write', sqliteError(code, 'attempt to write a readonly database'));
    t.type(fault, StoreFailedError, code);
    t.match(fault.problem, problem);
    t.notMatch(fault.problem, /retry/i, 'never says retry');
  }
  t.type(
    classifySqlite('read', new TypeError('The database connection is not open')),
    StoreUnavailableError,
    'closed while shutting down',
  );
});

t.test('Redis failures: a replica, credentials and permissions are permanent; the rest transient', async (t) => {
  const cases: [string, typeof StoreFailedError | typeof StoreUnavailableError, RegExp][] = [
    ["READONLY You can't write against a read only replica.", StoreFailedError, /read-only \(a replica/],
    ['WRONGPASS invalid username-password pair or user is disabled.', StoreFailedError, /credentials/],
    ['NOAUTH Authentication required.', StoreFailedError, /credentials/],
    ["NOPERM User x has no permissions to access the 'compactor:secret' key", StoreFailedError, /permission/],
    ["OOM command not allowed when used memory > 'maxmemory'.", StoreUnavailableError, /full/],
    ['MISCONF Redis is configured to save RDB snapshots', StoreUnavailableError, /persist/],
    ['LOADING Redis is loading the dataset in memory', StoreUnavailableError, /loading/],
    ['Command timed out', StoreUnavailableError, /did not answer in time/],
  ];
  for (const [message, kind, problem] of cases) {
    const fault = classifyRedis('write', new Error(message));
    t.type(fault, kind, message);
    t.match(fault.problem, problem);
  }
  const aborted = Object.assign(new Error('EXECABORT Transaction discarded because of previous errors.'), {
    previousErrors: [new Error("READONLY You can't write against a read only replica.")],
  });
  t.type(classifyRedis('write', aborted), StoreFailedError, 'a transaction refused whole is judged by its first refusal');
  const refused = classifyRedis('write', new Error('Reached the max retries per request limit'), 'ECONNREFUSED');
  t.type(refused, StoreUnavailableError);
  t.equal(refused.problem, 'cannot be reached (ECONNREFUSED)', 'the last connection error says why');
  t.type(classifyRedis('write', new Error('Reached the max retries per request limit'), 'WRONGPASS'), StoreFailedError);
  t.equal(
    classifyRedis('write', new Error('Command timed out'), 'ECONNREFUSED').problem,
    'cannot be reached (ECONNREFUSED)',
    'a command that timed out waiting for a connection that is down: the connection is why',
  );
});

t.test(
  'a database path under /proc fails at once, naming the folder (Node 20 recursive mkdir loops forever there)',
  async (t) => {
    // A hang would never return (the test's own timeout fails it): each throw is the proof, not a time.
    t.throws(() => prepareFile('/proc/self/no-such-dir/deeper/store.db'), {
      name: 'StoreFailedError',
      problem: /cannot create its folder \/proc\/self\/no-such-dir/,
    });
    t.throws(() => prepareFile('/proc/version/store.db'), { name: 'StoreFailedError', problem: /\/proc\/version is a file/ });
    t.throws(() => prepareFile('/tmp'), { name: 'StoreFailedError', problem: /it is a folder, not a database file/ });
  },
);

/** A store whose probe the test controls, counting calls. */
function probed(probe: () => Promise<void>): ArtifactStore & { calls: number } {
  const store = Object.assign(new MemoryStore(), { calls: 0 });
  store.probe = async () => {
    store.calls++;
    return probe();
  };
  return store;
}

t.test('store health: one probe per cache period, shared by concurrent checks, never waited on past its timeout', async (t) => {
  let now = 1000;
  const ok = probed(async () => {});
  const health = new StoreHealth(ok, { cacheMs: 1500, timeoutMs: 200, now: () => now });
  t.same(await Promise.all([health.check(), health.check(), health.check()]), [{ ok: true }, { ok: true }, { ok: true }]);
  t.equal(ok.calls, 1, 'three concurrent checks, one probe');
  now += 1000;
  await health.check();
  t.equal(ok.calls, 1, 'reused within the cache period');
  now += 600;
  await health.check();
  t.equal(ok.calls, 2, 'probed again after it');

  let release = () => {};
  const hung = probed(() => new Promise<void>((resolve) => (release = resolve)));
  const slow = new StoreHealth(hung, { cacheMs: 1500, timeoutMs: 200 });
  // The probe never answers until released: an answer at all is the timeout's (no wall-clock bound).
  const state = await slow.check();
  t.same(state, { ok: false, status: 'store_unavailable', reason: 'the memory store did not answer within 200 ms' });
  await slow.check();
  t.equal(hung.calls, 1, 'a probe still running is waited for, not doubled');
  release();
  await new Promise((r) => setTimeout(r, 10));
  t.same(await slow.check(), { ok: true }, 'its late answer is used once it comes');

  const failed = new StoreHealth(
    probed(async () => {
      throw new StoreFailedError('sqlite probe failed: SQLITE_READONLY', 'is read-only (its file or folder cannot be written)');
    }),
  );
  t.same(await failed.check(), {
    ok: false,
    status: 'store_failed',
    reason: 'the memory store is read-only (its file or folder cannot be written)',
  });
  const down = new StoreHealth(
    probed(async () => {
      throw new StoreUnavailableError('redis probe failed', 'cannot be reached (ECONNREFUSED)');
    }),
  );
  t.same(await down.check(), {
    ok: false,
    status: 'store_unavailable',
    reason: 'the memory store cannot be reached (ECONNREFUSED)',
  });
});
