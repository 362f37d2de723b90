// Writes openapi/examples.json (the app's own answers to the request examples) and then
// openapi/openapi.json from the route schemas of the built app, with those examples (run
// `npm run openapi`). Tests fail when either committed file differs from what the app does.
import { writeFileSync } from 'node:fs';
import { buildApp, loadConfig } from '../dist/index.js';
import { RECORDED_EXAMPLES } from '../dist/plugins/external/openapi-examples.js';
import { REQUEST_EXAMPLES } from '../dist/schemas/examples/requests.js';

/** A fixed artifact secret: the recorded artifact ids are the same on every run (the test uses it too). */
const EXAMPLES_CONFIG = {
  LOG_LEVEL: 'silent',
  COMPACTOR_STORE_URL: 'memory:',
  COMPACTOR_ARTIFACT_SECRET: 'openapi-examples-0123456789abcdef0123456789',
  // A busy machine must not make the recording fail: no load shedding here.
  COMPACTOR_MAX_EVENT_LOOP_DELAY_MS: '0',
  COMPACTOR_MAX_QUEUE_WAIT_MS: '0',
};
const config = () => loadConfig(EXAMPLES_CONFIG);

/**
 * The recorded answers are made at a fixed instant (`new Date()` and `Date.now()` answer it while
 * recording), so that their timestamps (`created_at`, `expires_at`) and therefore both files and the
 * client's types change only when the answers do.
 */
const RECORDED_AT = Date.parse('2026-12-02T06:14:40.891Z');
class RecordedDate extends Date {
  constructor(...args) {
    if (args.length === 0) super(RECORDED_AT);
    else super(...args);
  }
  static now() {
    return RECORDED_AT;
  }
}

/** The app's answers: to the first request example of every POST, and to a few GETs. */
async function record() {
  const app = await buildApp(config());
  await app.ready();
  const call = async (method, url, payload) => {
    const res = await app.inject({ method, url, ...(payload ? { payload } : {}) });
    if (res.statusCode !== 200) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const responses = {};
  for (const [url, examples] of Object.entries(REQUEST_EXAMPLES)) {
    responses[`POST ${url}`] = { 200: await call('POST', url, Object.values(examples)[0].value) };
  }
  // Expand's example is the compaction example's output. An artifact id is keyed by the
  // installation's secret, so only the service that compacted can restore: elsewhere, `missing`.
  const compacted = responses['POST /v1/compact'][200];
  const expand = {
    'openai-chat': {
      summary: 'OpenAI Chat Completions: restore a compacted history',
      description:
        'The output of the `/v1/compact` example: two placeholders, each naming the artifact that holds its original. The service that made them puts the originals back byte-exact (`restored`); artifact ids are keyed by the installation\'s secret, so any other lists them in `missing`. To see the round trip on this service, run the `/v1/compact` example and paste its `messages` here (or compact with `store: "inline"` and pass its `artifacts` too).',
      value: { messages: compacted.messages },
    },
  };
  responses['POST /v1/expand'] = { 200: await call('POST', '/v1/expand', expand['openai-chat'].value) };
  const stored = responses['POST /v1/compact'][200].artifacts[0];
  responses['GET /v1/artifacts/{id}'] = { 200: await call('GET', `/v1/artifacts/${stored.id}`) };
  // A prepared summary: the fit example that prepares one, followed until it is made.
  const { prepared } = await call('POST', '/v1/fit', REQUEST_EXAMPLES['/v1/fit'].prepare.value);
  let view = await call('GET', `/v1/prepared/${prepared.id}`);
  for (let i = 0; i < 500 && (view.state === 'started' || view.state === 'running'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    view = await call('GET', `/v1/prepared/${prepared.id}`);
  }
  responses['GET /v1/prepared/{id}'] = { 200: view };
  // A conversation: the fit example, named as one, and the calls it recorded.
  await call('POST', '/v1/fit', { ...Object.values(REQUEST_EXAMPLES['/v1/fit'])[0].value, conversation_id: 'agent-run-1' });
  responses['GET /v1/conversations'] = { 200: await call('GET', '/v1/conversations') };
  responses['GET /v1/conversations/{id}'] = { 200: await call('GET', '/v1/conversations/agent-run-1') };
  responses['GET /health/live'] = { 200: await call('GET', '/health/live') };
  responses['GET /health/ready'] = { 200: await call('GET', '/health/ready'), 503: { status: 'draining' } };
  await app.close();
  return { responses, requests: { '/v1/expand': expand } };
}

const RealDate = globalThis.Date;
globalThis.Date = RecordedDate;
const recorded = await record().finally(() => {
  globalThis.Date = RealDate;
});
writeFileSync(RECORDED_EXAMPLES, `${JSON.stringify(recorded, null, 2)}\n`);
const app = await buildApp(config());
await app.ready();
const doc = app.swagger();
writeFileSync(new URL('../openapi/openapi.json', import.meta.url), `${JSON.stringify(doc, null, 2)}\n`);
await app.close();
console.log(
  `openapi/openapi.json: ${Object.keys(doc.paths ?? {}).length} paths, ${Object.keys(doc.components?.schemas ?? {}).length} schemas; openapi/examples.json`,
);
