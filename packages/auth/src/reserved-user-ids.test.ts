import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jwt from 'jsonwebtoken';
import { createPgliteDatabase, migrate, type Database } from '@agent-backend/store';
import { signAccessToken, verifyAccessToken } from './access-tokens.js';
import { throwawayKeys, type KeyPair } from './keys.js';
import { RefreshTokenService } from './refresh-tokens.js';
import { ReservedUserIdError, isReservedUserId } from './reserved-user-ids.js';

/** The forms the service gives its own users: a chat's owner and scheduled runs. */
const RESERVED = ['chat:lark:oc_123', 'chat:feishu:oc_9', 'task:t1'];

describe('reserved user ids', () => {
  let db: Database;
  let keys: KeyPair;
  beforeAll(async () => {
    db = await createPgliteDatabase();
    await migrate(db);
    keys = await throwawayKeys();
  });
  afterAll(async () => {
    await db.close();
  });

  it('are the chat and scheduled-task forms, compared exactly', () => {
    for (const id of RESERVED) expect(isReservedUserId(id)).toBe(true);
    for (const id of ['user-1', 'Chat:lark:x', 'chatty', 'my-task:1', '']) {
      expect(isReservedUserId(id)).toBe(false);
    }
  });

  it('can never be issued a token', async () => {
    const tokens = new RefreshTokenService(db, keys);
    for (const id of RESERVED) {
      await expect(signAccessToken(keys, id)).rejects.toThrow(ReservedUserIdError);
      await expect(tokens.issuePair(id)).rejects.toThrow(/reserved/);
    }
    const { rows } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM refresh_tokens WHERE user_id = ANY($1)',
      [RESERVED],
    );
    expect(rows[0]?.n).toBe(0);
    await expect(tokens.issuePair('user-1')).resolves.toHaveProperty('accessToken');
  });

  it("are refused as the subject of a token signed with the service's own key", async () => {
    const now = Math.floor(Date.now() / 1000);
    for (const id of RESERVED) {
      const forged = jwt.sign({ sub: id, iat: now, exp: now + 600 }, keys.privateKey!, {
        algorithm: 'RS256',
      });
      await expect(verifyAccessToken(keys, forged)).rejects.toThrow(/reserved/);
    }
  });
});
