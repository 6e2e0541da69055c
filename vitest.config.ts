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

/**
 * Two projects. `packages` (each package's and app's own tests: adapters, contracts, in-process
 * servers) runs its files one after another in one reused process per worker (`isolate: false`):
 * importing the workspace's sources and their libraries again for each of ~90 files cost about
 * 2.4 s per file, half of that project's time. Its tests must leave process-wide state
 * (`process.env`, globals, timers) as they found it. `e2e` (tests/: clusters of real processes,
 * browsers) keeps a fresh process per file: some of its files change `process.env`.
 */
export default defineConfig({
  resolve: { alias },
  test: {
    exclude: ['**/node_modules/**', `${FAULTS_DIR}/**`],
    globalSetup: ['packages/testing/src/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'packages',
          include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts'],
          isolate: false,
        },
      },
      { extends: true, test: { name: 'e2e', include: ['tests/**/*.test.ts'] } },
    ],
  },
});
