// Writes openapi/openapi.json from the route schemas of the built app (run `npm run openapi`).
// A test fails when the committed file differs from what the app serves.
import { writeFileSync } from 'node:fs';
import { buildApp, loadConfig } from '../dist/index.js';

const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent' }));
await app.ready();
const doc = app.swagger();
writeFileSync(new URL('../openapi/openapi.json', import.meta.url), `${JSON.stringify(doc, null, 2)}\n`);
await app.close();
console.log(
  `openapi/openapi.json: ${Object.keys(doc.paths ?? {}).length} paths, ${Object.keys(doc.components?.schemas ?? {}).length} schemas`,
);
