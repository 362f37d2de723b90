import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../support/app.js';
import { findChromium } from '../support/chromium.js';

/**
 * Swagger UI in a real browser: on the real app listening on a port, "Try it out" then "Execute"
 * on every POST endpoint sends the endpoint's default example as it is and gets a 200 of the
 * documented shape. Needs a Chromium binary (Debian's `chromium`, or `CHROMIUM_PATH`); skips
 * saying so when there is none.
 */

type Json = Record<string, unknown>;
const isInt = (v: unknown) => Number.isInteger(v);
const SHAPES: Record<string, (body: Json) => boolean> = {
  '/v1/window': (b) => strategy(b) && typeof b.dropped === 'object',
  '/v1/compact': (b) => strategy(b) && Array.isArray(b.artifacts) && b.artifacts.length > 0,
  '/v1/summarize': (b) => strategy(b) && (b.summary as Json | null)?.summarizer === 'extractive',
  '/v1/fit': (b) => strategy(b) && Array.isArray(b.stages) && typeof b.cost === 'object',
  '/v1/expand': (b) => Array.isArray(b.messages) && isInt(b.restored) && Array.isArray(b.missing),
  '/v1/tokens': (b) => isInt(b.total) && Array.isArray(b.messages) && typeof b.tokenizer === 'string',
  '/v1/validate': (b) => b.valid === true && Array.isArray(b.violations),
};
const STRATEGY_SHAPES = { '/v1/window': 1, '/v1/compact': 1, '/v1/summarize': 1, '/v1/fit': 1 };
function strategy(b: Json): boolean {
  const tokens = b.tokens as { before: number; after: number } | undefined;
  return Array.isArray(b.messages) && b.applied === true && !!tokens && tokens.after < tokens.before && Array.isArray(b.actions);
}

const chromium = findChromium();
/** Screenshots kept as test artifacts (gitignored). */
const SHOTS = resolve(import.meta.dirname, '../artifacts');

t.test(
  'Swagger UI: Try it out, then Execute, on every POST endpoint answers 200 with the documented shape',
  { skip: chromium ? false : 'no Chromium binary found (apt-get install chromium, or set CHROMIUM_PATH)', timeout: 90_000 },
  async (t) => {
    const { chromium: playwright } = await import('playwright-core');
    const app: FastifyInstance = await build(t, { COMPACTOR_STORE_URL: 'memory:' });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;
    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as {
      paths: Record<
        string,
        { post?: { requestBody: { content: { 'application/json': { examples: Record<string, { value: Json }> } } } } }
      >;
    };
    const posts = Object.keys(doc.paths).filter((path) => doc.paths[path]?.post);
    t.same([...posts].sort(), Object.keys(SHAPES).sort(), 'every POST endpoint is exercised');

    const browser = await playwright.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    t.teardown(() => browser.close());
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(`${base}/docs`);
    await page.locator('.opblock-post').first().waitFor();
    // A service without keys is open: no Authorize button, no lock on any endpoint.
    t.equal(await page.locator('.btn.authorize').count(), 0, 'no Authorize button');
    t.equal(await page.locator('.authorization__btn').count(), 0, 'no lock icons');

    for (const path of posts) {
      const block = page.locator('.opblock-post', { has: page.locator(`.opblock-summary-path[data-path="${path}"]`) });
      await block.locator('.opblock-summary').first().click();
      await block.locator('.try-out__btn').click();
      const [response] = await Promise.all([
        page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
        block.locator('.btn.execute').click(),
      ]);
      const examples = doc.paths[path]?.post?.requestBody.content['application/json'].examples ?? {};
      t.same(
        response.request().postDataJSON(),
        Object.values(examples)[0]?.value,
        `${path}: the default example is sent as it is`,
      );
      t.equal(response.status(), 200, `${path}: 200`);
      const body = (await response.json()) as Json;
      t.ok(SHAPES[path]?.(body), `${path}: the body has the documented shape`);
      const shown = block.locator('.live-responses-table tbody .response-col_status').first();
      await shown.waitFor();
      t.match((await shown.textContent()) ?? '', /^\s*200/, `${path}: the UI shows 200`);
      // The answer is one screen below Execute: the long examples above it are collapsed.
      const [distance, height] = await block.evaluate((b) => {
        const execute = b.querySelector('.btn.execute')?.getBoundingClientRect();
        const answer = b.querySelector('.live-responses-table tbody .response-col_description')?.getBoundingClientRect();
        return [answer && execute ? answer.top - execute.bottom : Number.NaN, b.getBoundingClientRect().height];
      });
      t.ok(
        distance >= 0 && distance <= 600,
        `${path}: the answer starts ${Math.round(distance)} px below Execute (block ${Math.round(height)} px)`,
      );
      if (path === '/v1/fit') {
        mkdirSync(SHOTS, { recursive: true });
        await block.screenshot({ path: join(SHOTS, 'swagger-fit.png') });
      }
      if (path in STRATEGY_SHAPES) {
        const text = (await block.locator('.live-responses-table .response-col_description pre').first().textContent()) ?? '';
        t.match(text, /^\s*\{\s*"applied"/, `${path}: the answer shown starts with its verdict`);
      }
    }
  },
);
