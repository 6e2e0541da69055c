// `pnpm docs:api`: writes docs/openapi.json and docs/asyncapi.json, the documents the api role
// serves at /openapi.json and /asyncapi.json.
import { writeFileSync } from 'node:fs';
import { apiDocFiles } from './api-docs-files.js';

for (const [path, text] of Object.entries(await apiDocFiles())) {
  writeFileSync(new URL(`../${path}`, import.meta.url), text);
  process.stderr.write(`wrote ${path}\n`);
}
