import { expect, it } from 'vitest';
import { bearerAuth } from './index.js';
import { useTestServer } from './testing/test-server.js';

const serve = useTestServer({ bodyLimit: 1024 });

it('bearerAuth sets the user from a verified token and answers 401 otherwise', async () => {
  const { url } = await serve((a) => {
    const verify = async (token: string) => {
      if (token === 'good') return { userId: 'u1' };
      throw new Error('token has expired');
    };
    a.get('/me', { preHandler: bearerAuth(verify) }, async (request) => ({
      // Typed: after the bearer hook the request's user is a string (no `!`).
      user: request.userId satisfies string,
    }));
    a.get('/anyone', {}, async (request) => ({
      // @ts-expect-error -- without the hook there may be no user.
      user: request.userId satisfies string,
    }));
  });
  const call = (authorization?: string) =>
    fetch(`${url}/me`, { headers: authorization ? { authorization } : {} });
  const ok = await call('Bearer good');
  expect(await ok.json()).toEqual({ user: 'u1' });
  for (const [header, message, reason] of [
    [undefined, 'missing Authorization header', 'invalid_request'],
    ['Basic abc', 'Authorization header must be "Bearer <access token>"', 'invalid_request'],
    ['Bearer bad', 'token has expired', 'invalid_token'],
  ] as const) {
    const res = await call(header);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer error="${reason}"`);
    expect(await res.json()).toEqual({ error: { code: 'unauthorized', message } });
  }
});
