import type { KeyObject } from 'node:crypto';
import { JwksDocument, type PublicJwk } from '@agent-backend/protocol';
import { ALGORITHM } from '@agent-backend/auth';
import type { ServiceContext } from '@agent-backend/runtime';

function toJwk(kid: string, key: KeyObject): PublicJwk {
  const { n, e } = key.export({ format: 'jwk' });
  return { kty: 'RSA', kid, use: 'sig', alg: ALGORITHM, n: n!, e: e! };
}

/**
 * `GET /.well-known/jwks.json` (beyond the spec): the public keys that verify the service's
 * access tokens, by `kid` (the current key, the next one `keys:rotate` announced, retired ones
 * until their tokens expired), so other services can verify them. Public; read per request, so
 * a rotation shows as soon as this process re-read the key set.
 */
export function registerJwksRoute({ app, keys }: ServiceContext): void {
  app.get(
    '/.well-known/jwks.json',
    {
      doc: {
        tag: 'auth',
        summary: "The public keys of the service's access tokens (JWKS)",
        description:
          'RFC 7517. Tokens name their key in the `kid` header; `iss` and `aud` are ' +
          '`agent-backend`. Cache it for minutes, and fetch again on an unknown `kid`.',
        responses: { 200: { description: 'The key set.', json: JwksDocument } },
      },
    },
    async (_request, reply) => {
      const byKid = new Map(keys.verificationKeys?.() ?? []);
      if (keys.kid && !byKid.has(keys.kid)) byKid.set(keys.kid, keys.publicKey);
      reply.setHeader('cache-control', 'public, max-age=300');
      return {
        keys: [...byKid].map(([kid, key]) => toJwk(kid, key)),
      } satisfies JwksDocument;
    },
  );
}
