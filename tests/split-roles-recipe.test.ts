/**
 * docs/deployment.md's "Split roles without Docker" is complete. Its one shell block
 * runs as written (npm forms, no pnpm on the PATH): keys, the api, then the gateway and the
 * worker on their own ports, a token, the simulator against the gateway renewing its token at
 * the api, and a tool call through the api that the gateway relays to the node. Only the
 * addresses change: free ports, the test's Redis key prefix and a fresh PostgreSQL schema.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createTestSchema,
  REPO_ROOT,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type TestSchema,
} from '@agent-backend/testing';
import { codeBlocks, jsonObjects, keeps, promisedAnswers, runShellBlocks } from './doc-blocks.js';
import { requireBuild, tempDir } from './helpers.js';

const PAGE = 'docs/deployment.md';
const HEADING = '### Split roles without Docker';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe('split roles without Docker (docs/deployment.md)', () => {
  let schema: TestSchema | undefined;
  afterAll(async () => {
    await schema?.drop();
  });

  it('the recipe runs as written and its tool call answers', async () => {
    requireBuild(
      'apps/api/dist/main.js',
      'apps/gateway/dist/main.js',
      'apps/worker/dist/main.js',
      'packages/node-client/dist/simulate-node.js',
    );
    const blocks = codeBlocks(PAGE).filter((b) => b.lang === 'sh');
    const text = readFileSync(join(REPO_ROOT, PAGE), 'utf8');
    const start = text.split('\n').indexOf(HEADING) + 1;
    const recipe = blocks.filter((b) => b.line > start).slice(0, 1);
    expect(recipe).toHaveLength(1);
    expect(recipe[0]!.code).toContain('npm run start:api');

    schema = await createTestSchema('recipe');
    const scratch = tempDir('split-recipe');
    const ports = { api: await freePort(), gateway: await freePort(), worker: await freePort() };
    const run = await runShellBlocks(recipe, {
      origin: `http://127.0.0.1:${ports.api}`,
      scratch,
      env: { DATABASE_SCHEMA: schema.schema, REDIS_KEY_PREFIX: uniquePrefix('recipe') },
      replace: [
        [/localhost:8001/g, `127.0.0.1:${ports.api}`],
        [/localhost:8002/g, `127.0.0.1:${ports.gateway}`],
        [/localhost:8003/g, `127.0.0.1:${ports.worker}`],
        [/PORT=8001/g, `PORT=${ports.api}`],
        [/PORT=8002/g, `PORT=${ports.gateway}`],
        [/PORT=8003/g, `PORT=${ports.worker}`],
        [/redis:\/\/127\.0\.0\.1:6379/g, testRedisUrl()],
        [/postgres:\/\/postgres@127\.0\.0\.1:5432\/agent/g, testDatabaseUrl()],
        [/\$PWD\/\.data\/keys/g, `${scratch}/keys`],
      ],
    });
    expect(run.code, `${run.script}\n--- stderr:\n${run.stderr}`).toBe(0);
    const answers = jsonObjects(run.stdout);
    const promised = promisedAnswers(recipe[0]!);
    expect(promised).toEqual([{ success: true, text: '42', images: [] }]);
    for (const answer of promised) {
      expect(
        answers.some((got) => keeps(answer, got)),
        run.stdout,
      ).toBe(true);
    }
  }, 300_000);
});
