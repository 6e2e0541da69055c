// `pnpm docs:api`: writes docs/openapi.json and docs/asyncapi.json from the protocol schemas and
// the route table of packages/api-docs (the same documents the api role serves).
import { writeFileSync } from 'node:fs';
import { buildAsyncApiDocument, buildOpenApiDocument } from '../packages/api-docs/src/index.js';

const write = (name: string, document: unknown) => {
  writeFileSync(
    new URL(`../docs/${name}`, import.meta.url),
    `${JSON.stringify(document, null, 2)}\n`,
  );
  process.stderr.write(`wrote docs/${name}\n`);
};
write('openapi.json', buildOpenApiDocument());
write('asyncapi.json', buildAsyncApiDocument());
