import { readdirSync, existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
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
    // Vitest's default is one worker less than the cores: a single worker on a 2-core CI
    // machine, where most test time is spent waiting on child processes, sockets and timers
    // (the serial suite took over 15 minutes). Two at least.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
