import { defineConfig } from 'vitest/config';
import { alias, FAULTS_DIR } from './vitest.config.js';

/**
 * The fault-injection suite (docs/RELIABILITY.md): the split deployment under traffic while
 * Redis, PostgreSQL, the network or a worker misbehave. Run by `pnpm test:faults` and by
 * `.ci/run` after the main suite; `npm test` excludes it. One file at a time: each starts its own
 * cluster (and its own Redis), and their traffic would otherwise compete for the same cores.
 * `FAULTS_PROFILE=long` runs longer and heavier traffic (tests/faults/profile.ts).
 */
export default defineConfig({
  resolve: { alias },
  test: {
    include: [`${FAULTS_DIR}/**/*.test.ts`],
    globalSetup: ['packages/testing/src/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
