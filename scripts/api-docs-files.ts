// The checked-in API documents as `pnpm docs:api` writes them: the OpenAPI document built from
// the routes the api role registers (each with its documentation), read from the role mounted on
// a server that never listens; the AsyncAPI document from the protocol schemas. Formatted with the
// repository's prettier settings. tests/docs.test.ts compares them with docs/.
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
// Resolved through the root tsconfig's paths (tsx, vitest), to the workspace sources.
import { mountApi } from '@agent-backend/api';
import { buildAsyncApiDocument, buildOpenApiDocument } from '@agent-backend/api-docs';
import { registeredRoutes } from '@agent-backend/runtime';

/** Repository-relative path to the file's text. */
export async function apiDocFiles(): Promise<Record<string, string>> {
  const routes = await registeredRoutes(async (context) => [await mountApi(context)]);
  const files: Record<string, unknown> = {
    'docs/openapi.json': buildOpenApiDocument(routes),
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
