import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../support/app.js';
import { findChromium } from '../support/chromium.js';
import { AGENTS, CLIENTS, installClient, registryReachable, runClient } from '../support/clients.js';
import { FakeProvider, rememberedSteps } from '../support/fake-provider.js';
import { upstreamRecords } from '../support/long-session/analysis.js';
import { billOf, PRICES } from '../support/long-session/figures.js';
import { listen } from '../support/net.js';
import { asObject, cacheParts } from '../support/provider/parse.js';
import { promptSegments, tokensOf } from '../support/provider/prefix-cache.js';
import type { JsonObject, RecordedRequest } from '../support/provider/types.js';
import { Recorder, type Sent } from '../support/recorder.js';

/**
 * Issue 41's proof, with a real agent: Claude Code (pinned, from npm, offline) runs a session
 * through the proxy against the repository's fake provider, sending Compactor's key in
 * `x-compactor-key` to a service whose keys guard everything (`COMPACTOR_AUTH_SCOPE=all`). Then:
 *
 * - the conversation record equals what the provider received: one call per model request, each
 *   with the outcome its `x-compactor` header said, the cache reads and writes the provider
 *   reported, its prefix breaks where the provider saw them, and a bill that is `bench/agents.mjs`'s
 *   (its relative prices, installed as the model's price row, so that dollars are its units);
 * - the page (`/ui`, in Chromium) lists the conversation, its timeline shows every call with its
 *   outcome, a click on an artifact shows the original the client sent, with no horizontal scroll
 *   at 1280 px; screenshots are kept in `test/artifacts/` (ignored by git);
 * - another key sees nothing of it, in the API and in the page.
 */

const chromium = findChromium();
const SHOTS = resolve(import.meta.dirname, '../artifacts');
const KEY_A = 'key-a-0123456789abcdef';
const KEY_B = 'key-b-0123456789abcdef';
const STEPS = 8;
/** proxy-clients.test.ts's options for Claude Code: a window its prompt and eight large outputs overflow. */
const OPTIONS = { context_window: 60_000, target_tokens: 22_000, limit: { tokens: 32_000 } };
const MODEL = AGENTS['claude-code'].defaultModel;

interface Call {
  id: string;
  via: string;
  model: string | null;
  outcome: string;
  tokens: { client: number; forwarded: number; saved: number; window: number | null };
  prefix: { kept: boolean; broken_at: number | null };
  cache: { read: number | null; write: number | null };
  cost: { unit: string; usd: number; straight_usd: number; source: string } | null;
  artifacts: { id: string; kind: string; message_index: number; tokens: number | null }[];
  summaries: { id: string; text_id: string | null }[];
}

interface Detail {
  id: string;
  calls: Call[];
  totals: {
    calls: number;
    tokens_saved: number;
    prefix_breaks: number;
    outcomes: Record<string, number>;
    bypasses: Record<string, number>;
    cost: { unit: string; usd: number; straight_usd: number; avoided: number } | null;
  };
}

/** A prompt's tokens as the fake provider counts them: characters / 4 of its tools, system and history. */
function fakeTokens(body: JsonObject): number {
  const parts = cacheParts('anthropic', body);
  return tokensOf(promptSegments(parts.tools, parts.system, parts.history).reduce((n, s) => n + s.length, 0));
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

t.test(`Claude Code@${CLIENTS['claude-code'].pinned} through the proxy, then its record and /ui`, async (t) => {
  try {
    await installClient('claude-code');
  } catch (error) {
    const registry = await registryReachable();
    if (registry.ok) throw error;
    t.pass('installed', { skip: `Claude Code cannot be installed: the npm registry is unreachable (${registry.reason})` });
    return;
  }
  const fake = await new FakeProvider({ scenario: rememberedSteps({ steps: STEPS, lines: 1500 }) }).start();
  t.teardown(() => fake.stop());
  // bench/agents.mjs's prices (relative to one uncached input token), per million, for the model the agent asks for.
  const dir = mkdtempSync(join(tmpdir(), 'compactor-ui-agent-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const pricesFile = join(dir, 'prices.json');
  const row = {
    prefix: MODEL,
    input: PRICES.input,
    cached_input: PRICES.cacheRead,
    cache_write: PRICES.cacheWrite,
    output: PRICES.output,
  };
  writeFileSync(pricesFile, JSON.stringify({ models: [row] }));
  const app: FastifyInstance = await build(t, {
    COMPACTOR_STORE_URL: 'memory:',
    COMPACTOR_API_KEYS: `${KEY_A},${KEY_B}`,
    COMPACTOR_AUTH_SCOPE: 'all',
    COMPACTOR_UPSTREAM_ANTHROPIC: fake.url,
    COMPACTOR_PROXY_OPTIONS: JSON.stringify(OPTIONS),
    COMPACTOR_PRICES_FILE: pricesFile,
    // A slow machine must not turn the proxy's decisions into budget bypasses.
    COMPACTOR_PROXY_BUDGET_MS: '30000',
  });
  const { base } = await listen(app);
  const recorder = await new Recorder(base).start();
  t.teardown(() => recorder.stop());

  const run = await runClient('claude-code', {
    baseUrl: `${recorder.url}/anthropic`,
    env: { ANTHROPIC_CUSTOM_HEADERS: `x-compactor-key: ${KEY_A}` },
    timeoutMs: 180_000,
  });
  t.equal(run.timedOut, false, 'the session finished');
  t.equal(run.exitCode, 0, 'Claude Code exits 0', { stderr: run.stderr.slice(-2000) });

  const sent: Sent[] = recorder.sent.filter((s) => /\/messages(\?|$)/.test(s.url));
  const upstream: RecordedRequest[] = fake.modelRequests();
  t.equal(upstream.length, sent.length, `one upstream request per model call (${sent.length})`);
  t.ok(
    sent.some((s) => s.compactor === 'reduced'),
    'the proxy reduced a call',
  );

  // The record, read once every call's usage is in (the usage is recorded when each answer has been read).
  const get = (url: string, key: string) => app.inject({ method: 'GET', url, headers: bearer(key) });
  let record: Detail | undefined;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const list = (await get('/v1/conversations', KEY_A)).json() as { conversations: { id: string }[] };
    const id = list.conversations[0]?.id;
    record = id ? ((await get(`/v1/conversations/${id}`, KEY_A)).json() as Detail) : undefined;
    if (record && record.calls.length >= sent.length && record.calls.every((c) => c.cost?.source === 'usage')) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!record) throw new Error('no conversation recorded');
  const conversation = record.id;
  t.same([...new Set(sent.map((s) => s.compactor === undefined))], [false], 'every call named what Compactor did');

  t.test('the record equals what the provider received and what bench/agents.mjs prices', async (t) => {
    const d = record as Detail;
    const list = (await get('/v1/conversations', KEY_A)).json() as { conversations: { id: string }[] };
    t.same(
      list.conversations.map((c) => c.id),
      [conversation],
      'one session, one conversation',
    );
    t.equal(d.totals.calls, upstream.length, 'a call per request the provider received');
    t.same(
      d.calls.map((c) => c.outcome),
      sent.map((s) => s.compactor),
      "each call's outcome, as its x-compactor header said",
    );
    t.ok(
      d.calls.every((c) => c.via === 'proxy' && c.model === MODEL && c.tokens.window === OPTIONS.context_window),
      'proxied calls of the model, measured against the window the proxy was given',
    );

    // Tokens the provider counted itself (its usage): equal, call by call.
    t.same(
      d.calls.map((c) => [c.cache.read, c.cache.write]),
      upstream.map((r) => [r.usage?.cacheRead, r.usage?.cacheWrite]),
      'the cache reads and writes the provider reported',
    );
    // Breaks: where the provider's cache found the prompt no longer began with an earlier one, as
    // bench/agents.mjs counts them (a request that does not extend the previous one of its conversation).
    const bench = upstreamRecords(fake.requests, [], []);
    const breaks = bench.filter((u) => u.extendsPrevious === false).length;
    t.ok(breaks > 0, `the reductions broke the cached prefix (${breaks})`);
    t.equal(d.totals.prefix_breaks, breaks, 'prefix breaks: as bench counts them');
    t.same(
      d.calls.map((c) => c.prefix.broken_at),
      upstream.map((r) => ((r.cache?.brokeAtSegment ?? -1) >= 0 ? (r.cache?.brokeAtSegment as number) - 2 : null)),
      'each where the provider found it (its segments: tools, system, then the messages)',
    );
    // The bill: bench's units, since the price row is bench's prices per million. Bench rounds each
    // part to a unit; it prices every prompt token not read as written (Claude Code marks a cache
    // breakpoint on every call, so the fake reports no uncached input and the two rules agree).
    t.ok(
      upstream.every((r) => r.usage && r.usage.input === r.usage.cacheRead + r.usage.cacheWrite),
      'every prompt token was read from or written to the cache',
    );
    const bill = billOf(bench, []);
    const units = (d.totals.cost?.usd ?? 0) * 1e6;
    t.ok(Math.abs(units - bill.total) <= 2, `the bill: ${units.toFixed(1)} units recorded, ${bill.total} as bench prices it`);
    t.equal(d.totals.cost?.unit, 'USD');

    // Tokens of the history: the record's are fit's counts (Compactor's estimate for Claude, calibrated
    // by the previous answer's usage), the fake's are characters / 4 of tools, system and history:
    // they differ by definition, so each side is compared with itself. A call that sent less than
    // the client had is one the provider received less for, and only those.
    const fakeSaved = sent.map((s, i) => {
      const client = fakeTokens(asObject(JSON.parse(s.body.toString('utf8'))) as JsonObject);
      return client - (upstream[i]?.usage?.input ?? 0);
    });
    t.same(
      d.calls.map((c) => c.tokens.saved > 0),
      fakeSaved.map((n) => n > 0),
      `the calls that saved tokens (${d.calls.filter((c) => c.tokens.saved > 0).length}) are the ones the provider received fewer for`,
    );
    t.same(
      fakeSaved.filter((_, i) => d.calls[i]?.tokens.saved === 0),
      fakeSaved.filter((_, i) => d.calls[i]?.tokens.saved === 0).map(() => 0),
      'a call that saved nothing reached the provider as the client sent it',
    );
    t.equal(
      d.totals.tokens_saved,
      d.calls.reduce((n, c) => n + c.tokens.client - c.tokens.forwarded, 0),
      `tokens saved over the session: ${d.totals.tokens_saved} (the provider's count: ${fakeSaved.reduce((a, b) => a + b, 0)})`,
    );
  });

  t.test(
    '/ui: the conversation, its timeline with every call, an artifact opened; another key sees nothing',
    { skip: chromium ? false : 'no Chromium binary found (apt-get install chromium, or set CHROMIUM_PATH)' },
    async (t) => {
      const d = record as Detail;
      const { chromium: playwright } = await import('playwright-core');
      const browser = await playwright.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
      t.teardown(() => browser.close());
      const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
      page.setDefaultTimeout(20_000);
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text());
      });
      const loaded: number[] = [];
      page.on('response', (r) => {
        if (new URL(r.url()).pathname.startsWith('/ui')) loaded.push(r.status());
      });

      // Keys guard everything here, yet the page loads: it holds no data; what it reads needs the key.
      await page.goto(`${base}/ui`);
      await page.getByText('enter a valid API key above').waitFor();
      t.ok(loaded.length >= 4 && loaded.every((s) => s === 200), `the page and its files load without a key (${loaded})`);
      await page.getByLabel('API key').fill(KEY_A);
      await page.getByRole('button', { name: 'Use key' }).click();
      const link = page.getByRole('link', { name: conversation });
      await link.waitFor();
      t.equal(await page.locator('#list-rows tr').count(), 1, 'the page lists the conversation');

      await link.click();
      await page.locator('#timeline svg').waitFor();
      const outcomes = await page.locator('#timeline .call').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-outcome')));
      t.same(
        outcomes,
        sent.map((s) => s.compactor),
        'the timeline shows every call with its outcome',
      );
      t.equal(await page.locator('#call-rows tr').count(), d.calls.length, 'and the table every call');
      t.equal(await page.locator('#timeline .break-mark').count(), d.totals.prefix_breaks, 'each prefix break marked');
      t.equal(await page.locator('#timeline line.window').count(), 1, 'the context window drawn');
      const firstBreak = d.calls.find((c) => !c.prefix.kept);
      t.ok(
        await page.locator('#call-rows td.broken', { hasText: `broken at #${firstBreak?.prefix.broken_at}` }).count(),
        'where the prefix broke',
      );
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, 'ui-agent-conversation.png'), fullPage: true });
      const width = await page.locator('html').evaluate((html) => html.scrollWidth);
      t.ok(width <= 1280, `no horizontal scrolling at 1280 px (${width} px)`);

      // The originals of the first reduced call: behind a disclosure when there are many (opened with the keyboard).
      const at = d.calls.findIndex((c) => c.outcome === 'reduced' && c.artifacts.length > 0);
      const call = d.calls[at] as Call;
      const row = page.locator(`#call-${at + 1}`);
      if ((await row.locator('details summary').count()) > 0) {
        await row.locator('details summary').focus();
        await page.keyboard.press('Enter');
      }
      const artifact = call.artifacts[0];
      if (!artifact) throw new Error('the reduced call lists no original');
      const button = row.locator(`button.ref[data-artifact="${artifact.id}"]`);
      await button.focus();
      await page.keyboard.press('Enter');
      await page.locator('#viewer[open]').waitFor();
      await page.locator('#viewer-meta', { hasText: 'expires' }).waitFor();
      const shown = JSON.parse((await page.locator('#viewer-body').textContent()) ?? 'null') as unknown;
      // The original is what Claude Code sent: the block of its message that the reduction replaced.
      const client = JSON.parse((sent[at] as Sent).body.toString('utf8')) as { messages: { content: unknown }[] };
      const message = client.messages[artifact.message_index]?.content;
      const blocks = Array.isArray(message) ? message : [message];
      const original = Array.isArray(shown) ? shown : [shown];
      const strip = (v: unknown) => JSON.stringify(v, (k, x) => (k === 'cache_control' ? undefined : x));
      t.ok(
        original.every((o) => blocks.some((b) => strip(b) === strip(o))),
        `a click on an artifact shows the original the client sent (message ${artifact.message_index})`,
      );
      await page.screenshot({ path: join(SHOTS, 'ui-agent-artifact.png') });
      await page.keyboard.press('Escape');
      await page.locator('#viewer[open]').waitFor({ state: 'detached' });

      // Another key: nothing of it, in the page and in the API.
      await page.getByLabel('API key').fill(KEY_B);
      await page.getByRole('button', { name: 'Use key' }).click();
      await page.getByText(/Cannot load: .*is unknown/).waitFor();
      t.equal(await page.locator('#call-rows tr').count(), 0, "the first key's calls are gone from the page");
      await page.getByRole('link', { name: 'All conversations' }).click();
      await page.getByText('No conversation recorded for this key yet.').waitFor();
      t.equal(await page.locator('#list-rows tr').count(), 0, 'another key sees nothing of it in the page');
      t.equal((await get(`/v1/conversations/${conversation}`, KEY_B)).statusCode, 404, 'nor its conversation in the API');
      t.same((await get('/v1/conversations', KEY_B)).json().conversations, [], 'nor in the list');
      t.equal((await get(`/v1/artifacts/${artifact.id}`, KEY_B)).statusCode, 404, 'nor its originals');
      t.same(
        problems.filter((p) => !/404|401/.test(p)),
        [],
        'no script error in the page',
      );
    },
  );
});
