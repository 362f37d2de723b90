import { readFileSync } from 'node:fs';
import t from 'tap';
// @ts-expect-error: a plain ES module script without types
import { samples } from '../../examples/histories/make.mjs';
import { build } from '../support/app.js';
import { schemaErrors } from '../support/schemas.js';

/**
 * The sample histories the docs' examples use (README.md, docs/try-it.md): committed as `make.mjs` writes them, valid for
 * their providers' own schemas and for the service, and long enough that compaction,
 * summarization and a forced fit each act on them.
 */
const dir = new URL('../../examples/histories/', import.meta.url);

for (const [file, body] of samples() as [string, { format: string; messages: unknown[] }][]) {
  t.test(file, async (t) => {
    const committed = readFileSync(new URL(file, dir), 'utf8');
    t.equal(committed, `${JSON.stringify(body, null, 1)}\n`, 'the committed file is what make.mjs writes');
    t.same(schemaErrors(body.format, body.messages), [], "every message passes its provider's schema");
    const app = await build(t);
    const post = async (url: string, extra: Record<string, unknown> = {}) => {
      const res = await app.inject({ method: 'POST', url, payload: { ...body, ...extra } });
      t.equal(res.statusCode, 200, `${url} answers 200`);
      return res.json();
    };
    t.same((await post('/v1/validate')).violations, [], 'no structural violation');
    const compacted = await post('/v1/compact');
    t.ok(compacted.applied && compacted.artifacts.length >= 5, 'compaction clears several old results');
    const summarized = await post('/v1/summarize', { keep: { messages: 10 } });
    t.ok(summarized.applied, 'summarization acts');
    const fit = await post('/v1/fit', { context_window: 6000, target_fraction: 0.5 });
    t.equal(fit.cost.decision, 'forced', 'fit in a small window is forced');
    t.ok(fit.tokens.after <= 3000, 'and meets its target');
  });
}
