import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

/** Where the page's files are, from `src/routes/` and from `dist/routes/` alike. */
const UI_DIR = new URL('../../ui/', import.meta.url);

const FILES = {
  '/ui': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/ui/timeline.js': { file: 'timeline.js', type: 'text/javascript; charset=utf-8' },
  '/ui/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
} as const;

/**
 * The page itself only: nothing from another origin, no inline script or style, no framing. Data
 * comes from `/v1/conversations` and `/v1/artifacts/{id}`, with the key the page was given.
 */
export const UI_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * `/ui`: the conversations page, served by the service itself (plain HTML, two small JS modules and
 * a style sheet from `ui/`, read once at boot; no CDN, no build step). The page holds no data: it
 * asks the API with the key entered in it (kept in the browser's session storage), so it is served
 * without a key under either `COMPACTOR_AUTH_SCOPE` (`config.page`: a browser cannot send a bearer
 * key for a page it navigates to), and keys guard what it reads exactly as they guard `/v1`.
 */
export default async function uiRoutes(app: FastifyInstance): Promise<void> {
  for (const [url, { file, type }] of Object.entries(FILES)) {
    const body = readFileSync(new URL(file, UI_DIR));
    app.get(url, { schema: { hide: true }, config: { page: true } }, async (_request, reply) =>
      reply
        .type(type)
        .header('content-security-policy', UI_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-cache')
        .send(body),
    );
  }
  app.get('/ui/', { schema: { hide: true }, config: { page: true } }, async (_request, reply) => reply.redirect('/ui'));
}
