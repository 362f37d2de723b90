import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { build } from '../support/app.js';
import { findChromium } from '../support/chromium.js';
import { loadCorpus } from '../support/corpus.js';

/**
 * The conversations page in a real browser, on the real app listening on a port: after a
 * conversation's calls are recorded (for now `/v1/fit` calls naming a `conversation_id`), the page
 * lists it, its timeline shows every call with its outcome, a click on an artifact shows the
 * original, and another key sees nothing of it. The screenshot is kept in `test/artifacts/`.
 */

const chromium = findChromium();
const SHOTS = resolve(import.meta.dirname, '../artifacts');
const KEY_A = 'key-a-0123456789ab';
const KEY_B = 'key-b-0123456789ab';

/** Points where the history may end: after a tool result whose batch is complete. */
function cuts(messages: { role?: string }[], count: number): number[] {
  const ok: number[] = [];
  for (let i = 1; i < messages.length; i++) if (messages[i - 1]?.role === 'tool' && messages[i]?.role !== 'tool') ok.push(i);
  ok.push(messages.length);
  const step = Math.max(1, Math.floor(ok.length / count));
  return [...new Set([...ok.filter((_, i) => i % step === 0), messages.length])].slice(-count);
}

t.test(
  '/ui: the conversation, its timeline with every call, an artifact opened; another key sees nothing',
  { skip: chromium ? false : 'no Chromium binary found (apt-get install chromium, or set CHROMIUM_PATH)', timeout: 120_000 },
  async (t) => {
    const django = loadCorpus().find((x) => x.file.includes('django__django-11138'));
    if (!django) throw new Error('corpus missing');
    const app: FastifyInstance = await build(t, { COMPACTOR_STORE_URL: 'memory:', COMPACTOR_API_KEYS: `${KEY_A},${KEY_B}` });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const base = `http://127.0.0.1:${port}`;

    const messages = django.messages as { role?: string }[];
    const answers: { applied: boolean }[] = [];
    for (const end of cuts(messages, 10)) {
      const res = await fetch(`${base}/v1/fit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` },
        body: JSON.stringify({
          messages: messages.slice(0, end),
          model: django.model,
          policy: 'tokens',
          target_tokens: 30_000,
          conversation_id: 'django-11138',
        }),
      });
      t.equal(res.status, 200);
      answers.push((await res.json()) as { applied: boolean });
    }
    t.ok(answers.some((a) => a.applied) && answers.some((a) => !a.applied), 'the session has calls reduced and calls unchanged');

    const { chromium: playwright } = await import('playwright-core');
    const browser = await playwright.launch({ executablePath: chromium, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    t.teardown(() => browser.close());
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    await page.goto(`${base}/ui`);
    await page.getByText('enter a valid API key above').waitFor();
    await page.getByLabel('API key').fill(KEY_A);
    await page.getByRole('button', { name: 'Use key' }).click();
    const row = page.getByRole('link', { name: 'django-11138' });
    await row.waitFor();
    t.equal(await page.locator('#list-rows tr').count(), 1, 'the page lists the conversation');

    await row.click();
    await page.locator('#timeline svg').waitFor();
    const outcomes = await page.locator('#timeline .call').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-outcome')));
    t.same(
      outcomes,
      answers.map((a) => (a.applied ? 'reduced' : 'unchanged')),
      'the timeline shows every call with its outcome',
    );
    t.equal(await page.locator('#call-rows tr').count(), answers.length, 'and the table every call');
    t.ok((await page.locator('#timeline .break-mark').count()) > 0, 'breaks are marked');
    const width = await page.locator('html').evaluate((html) => html.scrollWidth);
    t.ok(width <= 1280, `no horizontal scrolling on a laptop screen (${width} px)`);

    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, 'ui-conversation.png'), fullPage: true });

    // The originals of a call are behind a disclosure: opened with the keyboard.
    const reduced = page.locator('#call-rows tr[data-outcome="reduced"]').first();
    await reduced.locator('summary').focus();
    await page.keyboard.press('Enter');
    const first = reduced.locator('.ref-list button.ref').first();
    const id = await first.getAttribute('data-artifact');
    await first.click();
    await page.locator('#viewer[open]').waitFor();
    await page.locator('#viewer-meta', { hasText: 'expires' }).waitFor();
    const shown = await page.locator('#viewer-body').textContent();
    const original = (await (
      await fetch(`${base}/v1/artifacts/${id}`, { headers: { authorization: `Bearer ${KEY_A}` } })
    ).json()) as {
      content: unknown;
    };
    t.equal(shown, JSON.stringify(original.content, null, 2), 'a click on an artifact shows the original');
    await page.screenshot({ path: join(SHOTS, 'ui-artifact.png') });
    await page.keyboard.press('Escape');
    await page
      .locator('#viewer[open]')
      .waitFor({ state: 'detached' })
      .catch(() => undefined);

    await page.getByLabel('API key').fill(KEY_B);
    await page.getByRole('button', { name: 'Use key' }).click();
    await page.getByText(/Cannot load: .*conversation "django-11138" is unknown/).waitFor();
    t.equal(await page.locator('#call-rows tr').count(), 0, "the first key's calls are gone from the page");
    await page.getByRole('link', { name: 'All conversations' }).click();
    await page.getByText('No conversation recorded for this key yet.').waitFor();
    t.equal(await page.locator('#list-rows tr').count(), 0, 'another key sees nothing of it in the page');
    const api = await fetch(`${base}/v1/conversations/django-11138`, { headers: { authorization: `Bearer ${KEY_B}` } });
    t.equal(api.status, 404, 'nor in the API');
    t.same(
      problems.filter((p) => !/404|401/.test(p)),
      [],
      'no script error in the page',
    );
  },
);
