import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config.js';

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
