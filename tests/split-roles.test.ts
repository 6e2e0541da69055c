import { runEntry, testRedisUrl } from '@agent-backend/testing';
import { describe, expect, it } from 'vitest';
import { describeSplitRoles, ENTRIES } from './split-roles-suite.js';

describeSplitRoles('Redis', () => ({ REDIS_URL: testRedisUrl() }), testRedisUrl);

describe('split roles', () => {
  it('a split role refuses to start without its shared engines and keys, listing every problem', async () => {
    const result = await runEntry(ENTRIES.api, [], { PORT: '0' });
    expect(result.code).toBe(1);
    for (const variable of ['REDIS_URL', 'DATABASE_URL', 'JWT_PUBLIC_KEY', 'JWT_PRIVATE_KEY']) {
      expect(result.stderr).toContain(`${variable}: required for the api role`);
    }
  });
});
