import t from 'tap';
import { ConfigError, loadConfig, redactUrl } from '../../src/config.js';

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

t.test('redactUrl hides the password of a URL, parsable or not', async (t) => {
  t.equal(redactUrl('redis://user:pw@host:6379/0'), 'redis://user:***@host:6379/0');
  t.equal(redactUrl('redis://:p@ss@host'), 'redis://:***@host', 'an unescaped @ in the password');
  t.equal(redactUrl('redis://token@host'), 'redis://***@host', 'a lone secret before @');
  t.equal(redactUrl('redis://host:6379/0'), 'redis://host:6379/0');
  t.equal(redactUrl('sqlite:./data/x@y.db'), 'sqlite:./data/x@y.db', 'not a URL with credentials');
});
