// The checked-in API documents as `pnpm docs:api` writes them: built from the protocol schemas
// and the route table of packages/api-docs, formatted with the repository's prettier settings.
// tests/api-docs.test.ts compares them with docs/.
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { buildAsyncApiDocument, buildOpenApiDocument } from '../packages/api-docs/src/index.js';

/** Repository-relative path to the file's text. */
export async function apiDocFiles(): Promise<Record<string, string>> {
  const files: Record<string, unknown> = {
    'docs/openapi.json': buildOpenApiDocument(),
    'docs/asyncapi.json': buildAsyncApiDocument(),
  };
  const texts: Record<string, string> = {};
  for (const [path, document] of Object.entries(files)) {
    const filepath = fileURLToPath(new URL(`../${path}`, import.meta.url));
    const options = await resolveConfig(filepath);
    texts[path] = await format(JSON.stringify(document), { ...options, filepath });
  }
  return texts;
}
