import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig, PRICES_FILE_MAX_BYTES, redactUrl } from '../../src/config.js';
import { workerCount } from '../../src/plugins/app/worker-task.js';

t.test('defaults', async (t) => {
  const config = loadConfig({});
  t.equal(config.HOST, '127.0.0.1');
  t.equal(config.PORT, 8080);
  t.equal(config.COMPACTOR_BODY_LIMIT, 33_554_432);
  t.equal(config.LOG_LEVEL, 'info');
});

t.test('values from the environment; empty means unset', async (t) => {
  const config = loadConfig({ PORT: '9000', HOST: '0.0.0.0', COMPACTOR_BODY_LIMIT: '', LOG_LEVEL: 'warn' });
  t.equal(config.PORT, 9000);
  t.equal(config.HOST, '0.0.0.0');
  t.equal(config.COMPACTOR_BODY_LIMIT, 33_554_432);
});

t.test('an invalid value names the variable', async (t) => {
  t.throws(() => loadConfig({ PORT: 'eighty' }), ConfigError);
  t.throws(() => loadConfig({ PORT: '70000' }), /PORT/);
  t.throws(() => loadConfig({ LOG_LEVEL: 'loud' }), /LOG_LEVEL/);
  t.throws(() => loadConfig({ COMPACTOR_BODY_LIMIT: '-1' }), /COMPACTOR_BODY_LIMIT/);
});

t.test('deadlines nest: the summarizer worst case must fit in the request deadline', async (t) => {
  t.throws(
    () =>
      loadConfig({
        COMPACTOR_SUMMARIZER_TIMEOUT_MS: '60000',
        COMPACTOR_SUMMARIZER_MAX_RETRIES: '2',
        COMPACTOR_DEADLINE_MS: '100000',
      }),
    /COMPACTOR_DEADLINE_MS/,
  );
  t.doesNotThrow(() =>
    loadConfig({
      COMPACTOR_SUMMARIZER_TIMEOUT_MS: '20000',
      COMPACTOR_SUMMARIZER_MAX_RETRIES: '2',
      COMPACTOR_DEADLINE_MS: '100000',
    }),
  );
  t.throws(() => loadConfig({ OPENAI_BASE_URL: 'http://127.0.0.1:1/v1' }), /COMPACTOR_SUMMARIZER_MODEL is required/);
  let message = '';
  try {
    loadConfig({ OPENAI_API_KEY: 'sk-secret', COMPACTOR_SUMMARIZER_MODEL: 'm', COMPACTOR_SUMMARIZER_TIMEOUT_MS: 'x' });
  } catch (error) {
    message = (error as Error).message;
  }
  t.match(message, /COMPACTOR_SUMMARIZER_TIMEOUT_MS/);
  t.notMatch(message, /sk-secret/, 'a key never appears in a boot error');
});

t.test('store URL and cap: a Redis URL that cannot be parsed is refused with its password redacted', async (t) => {
  t.equal(loadConfig({}).COMPACTOR_STORE_MAX_BYTES, 1024 * 1024 * 1024, 'a 1 GiB cap by default');
  t.equal(loadConfig({ COMPACTOR_STORE_MAX_BYTES: '0' }).COMPACTOR_STORE_MAX_BYTES, 0, '0: no cap');
  t.throws(() => loadConfig({ COMPACTOR_STORE_MAX_BYTES: '-1' }), /COMPACTOR_STORE_MAX_BYTES/);
  for (const url of ['redis://:hunter2@[bad', 'redis://user:hunter2@host:6379/zero', 'redis://:hunter2@']) {
    let message = '';
    try {
      loadConfig({ COMPACTOR_STORE_URL: url });
    } catch (error) {
      message = (error as Error).message;
    }
    t.match(message, /COMPACTOR_STORE_URL=.*not a valid Redis URL/, url.replace('hunter2', '…'));
    t.notMatch(message, /hunter2/, 'the password is not shown');
  }
  t.equal(
    loadConfig({ COMPACTOR_STORE_URL: 'rediss://user:pw@cache.internal:6380/2' }).COMPACTOR_STORE_URL,
    'rediss://user:pw@cache.internal:6380/2',
  );
  t.throws(
    () => loadConfig({ OPENAI_BASE_URL: 'ftp://llm', COMPACTOR_SUMMARIZER_MODEL: 'm' }),
    /OPENAI_BASE_URL="ftp:\/\/llm": expected an http/,
  );
});

t.test('Redis key prefixes and the job lock: defaults, values, refusals', async (t) => {
  const defaults = loadConfig({});
  t.equal(defaults.COMPACTOR_STORE_PREFIX, 'compactor', "the artifacts' keys as before (compactor:…)");
  t.equal(defaults.COMPACTOR_JOBS_PREFIX, 'compactor');
  t.equal(defaults.COMPACTOR_JOBS_LOCK_MS, 20_000);
  const set = loadConfig({ COMPACTOR_STORE_PREFIX: '{tenant-a}', COMPACTOR_JOBS_LOCK_MS: '2000' });
  t.equal(set.COMPACTOR_STORE_PREFIX, '{tenant-a}');
  t.equal(set.COMPACTOR_JOBS_LOCK_MS, 2000);
  t.throws(() => loadConfig({ COMPACTOR_STORE_PREFIX: 'a:b' }), /COMPACTOR_STORE_PREFIX="a:b": expected 1 to 64/);
  t.throws(() => loadConfig({ COMPACTOR_JOBS_LOCK_MS: '999' }), /COMPACTOR_JOBS_LOCK_MS/);
});

t.test('redactUrl hides the password of a URL, parsable or not', async (t) => {
  t.equal(redactUrl('redis://user:pw@host:6379/0'), 'redis://user:***@host:6379/0');
  t.equal(redactUrl('redis://:p@ss@host'), 'redis://:***@host', 'an unescaped @ in the password');
  t.equal(redactUrl('redis://token@host'), 'redis://***@host', 'a lone secret before @');
  t.equal(redactUrl('redis://host:6379/0'), 'redis://host:6379/0');
  t.equal(redactUrl('sqlite:./data/x@y.db'), 'sqlite:./data/x@y.db', 'not a URL with credentials');
});

/** The message a refused configuration boots with ('' when it loads). */
function refusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
    return '';
  } catch (error) {
    t.ok(error instanceof ConfigError, 'a ConfigError (exit 78)');
    return (error as Error).message;
  }
}

t.test('API keys: a list that trims to nothing, or a short key, is refused; no key is shown', async (t) => {
  for (const value of [',', ' , ', ' ']) {
    t.match(refusal({ COMPACTOR_API_KEYS: value }), /COMPACTOR_API_KEYS=\(redacted\): lists no key/, JSON.stringify(value));
  }
  t.same(loadConfig({ COMPACTOR_API_KEYS: '' }).COMPACTOR_API_KEYS, undefined, 'empty is unset, as for every variable');
  const message = refusal({ COMPACTOR_API_KEYS: 'a-long-enough-key-0001,short-key' });
  t.match(message, /COMPACTOR_API_KEYS=\(redacted\): key 2 of 2 has 9 characters; at least 16/);
  t.notMatch(message, /short-key/, 'the key is not shown');
  t.same(loadConfig({ COMPACTOR_API_KEYS: ' 0123456789abcdef , fedcba9876543210 ,' }).COMPACTOR_API_KEYS, [
    '0123456789abcdef',
    'fedcba9876543210',
  ]);
});

t.test('numbers: only decimal digits (no hex, exponent, sign, fraction or spaces)', async (t) => {
  for (const value of ['0x10', '0X1F', '1e3', '+8080', '8080.0', ' 8080', '0b11', '0o17', 'Infinity']) {
    t.match(refusal({ PORT: value }), /PORT=.*: expected a whole number in decimal digits/, value);
  }
  t.match(refusal({ COMPACTOR_STORE_MAX_BYTES: '0x40000000' }), /COMPACTOR_STORE_MAX_BYTES="0x40000000"/);
  t.equal(loadConfig({ PORT: '08080' }).PORT, 8080, 'leading zeros are decimal');
  t.equal(loadConfig({ COMPACTOR_STORE_MAX_BYTES: '1073741824' }).COMPACTOR_STORE_MAX_BYTES, 1073741824);
});

t.test('unknown COMPACTOR_* names are refused, naming the closest known one', async (t) => {
  t.match(
    refusal({ COMPACTOR_STORE_MAX_BYTE: '1000' }),
    /COMPACTOR_STORE_MAX_BYTE is not a configuration variable \(did you mean COMPACTOR_STORE_MAX_BYTES\?\)/,
  );
  t.match(refusal({ COMPACTOR_API_KEYZ: 'x' }), /COMPACTOR_API_KEYZ .*did you mean COMPACTOR_API_KEYS\?/);
  t.match(refusal({ COMPACTOR_NONSENSE_SETTING: '1' }), /COMPACTOR_NONSENSE_SETTING is not a configuration variable/);
  t.notMatch(refusal({ COMPACTOR_API_KEYZ: 'sk-hidden' }), /sk-hidden/, 'the value is not shown');
  t.doesNotThrow(() => loadConfig({ OTHER_TOOL_SETTING: 'x', NODE_OPTIONS: '' }), 'other prefixes are not ours to judge');
  // Read by the clients, tests and benchmarks of this repository, which share shells with the service.
  for (const name of ['COMPACTOR_URL', 'COMPACTOR_TEST_REDIS_URL', 'COMPACTOR_CORPUS_DIR', 'COMPACTOR_LOAD_SECONDS']) {
    t.doesNotThrow(() => loadConfig({ [name]: 'x' }), name);
  }
  t.doesNotThrow(
    () => loadConfig({ COMPACTOR_API_KEY: 'x', COMPACTOR_API_KEYS: '0123456789abcdef' }),
    "a client's key beside the list",
  );
  t.match(
    refusal({ COMPACTOR_API_KEY: '0123456789abcdef' }),
    /COMPACTOR_API_KEY is the clients' variable .*COMPACTOR_API_KEYS/,
    'the client variable alone would leave the service open',
  );
});

t.test('the prices file: only a regular file under the size limit is read', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'compactor-prices-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  t.match(refusal({ COMPACTOR_PRICES_FILE: '/dev/zero' }), /COMPACTOR_PRICES_FILE="\/dev\/zero": not a regular file/);
  t.match(refusal({ COMPACTOR_PRICES_FILE: dir }), /not a regular file \(a folder\)/);
  const fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  t.match(refusal({ COMPACTOR_PRICES_FILE: fifo }), /not a regular file \(a FIFO\)/, 'a FIFO with no writer does not block');
  const big = join(dir, 'big.json');
  writeFileSync(big, `{"models": [], "pad": "${'x'.repeat(PRICES_FILE_MAX_BYTES)}"}`);
  t.match(refusal({ COMPACTOR_PRICES_FILE: big }), new RegExp(`larger than ${PRICES_FILE_MAX_BYTES} bytes`));
});

t.test(
  'the proxy: upstreams are URLs or off, its options a JSON object, and the summarizer never points at the service itself',
  async (t) => {
    const c = loadConfig({});
    t.equal(c.COMPACTOR_UPSTREAM_ANTHROPIC, 'https://api.anthropic.com');
    t.equal(loadConfig({ COMPACTOR_UPSTREAM_GEMINI: 'off' }).COMPACTOR_UPSTREAM_GEMINI, 'off');
    t.throws(() => loadConfig({ COMPACTOR_UPSTREAM_OPENAI: 'ftp://x' }), /COMPACTOR_UPSTREAM_OPENAI/);
    t.throws(() => loadConfig({ COMPACTOR_UPSTREAM_OPENAI: 'https://user:pw@api.openai.com' }), /COMPACTOR_UPSTREAM_OPENAI/);
    t.same(loadConfig({ COMPACTOR_PROXY_OPTIONS: '{"target_fraction":0.6}' }).COMPACTOR_PROXY_OPTIONS, { target_fraction: 0.6 });
    t.throws(() => loadConfig({ COMPACTOR_PROXY_OPTIONS: '[1]' }), /COMPACTOR_PROXY_OPTIONS/);
    const self = { OPENAI_BASE_URL: 'http://127.0.0.1:8080/openai/v1', COMPACTOR_SUMMARIZER_MODEL: 'm' };
    t.throws(() => loadConfig(self), /points at this service itself/);
    t.doesNotThrow(() => loadConfig({ ...self, PORT: '9090' }), 'another port is another service');
    t.doesNotThrow(() => loadConfig({ ...self, OPENAI_BASE_URL: 'http://127.0.0.1:8080/v1' }), 'not a proxy path');
  },
);

t.test('COMPACTOR_WORKERS: auto sizes the pool to the machine, a number is itself', async (t) => {
  t.equal(loadConfig({}).COMPACTOR_WORKERS, 'auto');
  t.equal(loadConfig({ COMPACTOR_WORKERS: '3' }).COMPACTOR_WORKERS, 3);
  t.equal(loadConfig({ COMPACTOR_WORKERS: '0' }).COMPACTOR_WORKERS, 0);
  t.throws(() => loadConfig({ COMPACTOR_WORKERS: 'many' }), /COMPACTOR_WORKERS/);
  t.throws(() => loadConfig({ COMPACTOR_WORKERS: '65' }), /COMPACTOR_WORKERS/);
  t.equal(workerCount('auto', 1), 1, 'one core: still one worker (large requests stay off the main thread)');
  t.equal(workerCount('auto', 2), 1);
  t.equal(workerCount('auto', 3), 2);
  t.equal(workerCount('auto', 64), 4, 'at most 4 (memory)');
  t.equal(workerCount(0, 8), 0);
  t.equal(workerCount(6, 2), 6);
});
