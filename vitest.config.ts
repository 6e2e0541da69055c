import { readdirSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Tests import workspace packages from their TypeScript sources, so no build is needed to test. */
export const alias = Object.fromEntries(
  ['apps', 'packages'].flatMap((dir) =>
    readdirSync(`${root}${dir}`)
      .filter((name) => existsSync(`${root}${dir}/${name}/src/index.ts`))
      .map((name) => [`@agent-backend/${name}`, `${root}${dir}/${name}/src/index.ts`]),
  ),
);

/** The fault-injection suite is its own project (vitest.faults.config.ts, `pnpm test:faults`). */
export const FAULTS_DIR = 'tests/faults';

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'tests/**/*.test.ts'],
    exclude: ['**/node_modules/**', `${FAULTS_DIR}/**`],
    globalSetup: ['packages/testing/src/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
