/**
 * Bearer authentication with the operator's identity-provider tokens (JWKS, RS256, keys fetched
 * by jwks-rsa from a JWKS server on loopback) against the service's own tokens, on one server
 * configured as the services are with `AUTH_JWKS_URL` (`withProviderTokens` over the remembered
 * own-token verifier), and the cost of a flood of provider-looking tokens with unknown `kid`s
 * (each one refused; the JWKS server counts how often it is asked).
 *
 *   node --import tsx bench/http-auth-provider.ts
 *
 * Env: REQUESTS (default 4000 per variant and round), ROUNDS (default 3), CONCURRENCY (default
 * 16), USERS (default 50 tokens of each kind), REFETCH_SECONDS (default 30, the service's
 * `AUTH_JWKS_REFETCH_SECONDS`). Client and server share the process and its cores, so CPU per
 * request counts both; the ratios between variants are what to read.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import jwt from 'jsonwebtoken';
import {
  createProviderTokenVerifier,
  createTokenVerifier,
  withProviderTokens,
} from '../packages/auth/src/index.js';
import { bearerAuth, createHttpServer } from '../packages/http-server/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import * as rounds from './support/bearer-rounds.js';

const { REQUESTS, ROUNDS, CONCURRENCY, USERS, keys, tokens: own } = await rounds.benchSetup();
const REFETCH_SECONDS = Number(process.env.REFETCH_SECONDS ?? 30);

// The identity provider: one RS256 key, published as a JWKS on loopback; every fetch counted.
const provider = generateKeyPairSync('rsa', { modulusLength: 2048 });
const KID = 'provider-key-1';
const ISSUER = 'https://login.example.test/';
const AUDIENCE = 'agent-backend';
let jwksFetches = 0;
const jwks = createServer((_req, res) => {
  jwksFetches += 1;
  const jwk = provider.publicKey.export({ format: 'jwk' });
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ keys: [{ ...jwk, kid: KID, alg: 'RS256', use: 'sig' }] }));
});
await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
const jwksAddress = jwks.address();
const jwksUrl = `http://127.0.0.1:${typeof jwksAddress === 'object' && jwksAddress ? jwksAddress.port : 0}/jwks.json`;

const providerTokens = Array.from({ length: USERS }, (_, i) =>
  jwt.sign({ sub: `p${i}` }, provider.privateKey, {
    algorithm: 'RS256',
    keyid: KID,
    issuer: ISSUER,
    audience: AUDIENCE,
    expiresIn: '1h',
  }),
);
/**
 * A forged provider token with a `kid` the provider never had: header and claims as a real
 * one's, any signature (the key lookup refuses it before any signature is checked).
 */
function forged(): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = part({ alg: 'RS256', typ: 'JWT', kid: randomBytes(8).toString('hex') });
  const now = Math.floor(Date.now() / 1000);
  const claims = part({ sub: 'mallory', iss: ISSUER, aud: AUDIENCE, iat: now, exp: now + 3600 });
  return `${header}.${claims}.${randomBytes(256).toString('base64url')}`;
}

const providerVerifier = createProviderTokenVerifier(
  { jwksUrl, issuer: ISSUER, audience: [AUDIENCE] },
  { minRefetchIntervalMs: REFETCH_SECONDS * 1000 },
);
const app = createHttpServer({ logger: createLogger({ level: 'silent' }) });
const verify = withProviderTokens(createTokenVerifier(keys), providerVerifier);
app.get('/me', { preHandler: bearerAuth(verify) }, async (req) => ({ user: req.userId }));
await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : 0;

const client = rounds.bearerClient(CONCURRENCY);

interface Variant {
  readonly name: string;
  readonly status: number;
  /** The token of the i-th request (made before the clock starts). */
  readonly token: (i: number) => string;
}
const variants: Variant[] = [
  { name: "service's own token (baseline)", status: 200, token: (i) => own[i % USERS]! },
  {
    name: 'identity-provider token (JWKS, RS256)',
    status: 200,
    token: (i) => providerTokens[i % USERS]!,
  },
  { name: 'flood: unknown `kid`, refused', status: 401, token: () => forged() },
];

async function round(variant: Variant) {
  const tokens = Array.from({ length: REQUESTS }, (_, i) => variant.token(i));
  return rounds.timedRound(REQUESTS, CONCURRENCY, async (i) => {
    const status = await client.get(port, tokens[i]!);
    if (status !== variant.status) throw new Error(`${variant.name}: status ${status}`);
  });
}

for (const v of variants) await round(v); // warm-up: the provider's keys are fetched here
const fetchesBefore = jwksFetches;
const floodStarted = performance.now();
const { results, loads } = await rounds.alternatingRounds(variants, ROUNDS, round);
const floodSeconds = results.get(variants[2]!.name)!.seconds;
const measuredSeconds = (performance.now() - floodStarted) / 1000;
const fetches = jwksFetches - fetchesBefore;

console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim()}; ${REQUESTS} requests × ` +
    `${ROUNDS} rounds per variant, ${CONCURRENCY} in flight, ${USERS} tokens of each kind; ` +
    `AUTH_JWKS_REFETCH_SECONDS=${REFETCH_SECONDS}; 1-min load ` +
    `${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}\n`,
);
const n = REQUESTS * ROUNDS;
rounds.printRoundsTable(variants, results, n, false);
console.log(
  `\nflood: ${n} tokens with unknown kids in ${floodSeconds.toFixed(1)} s (all refused with 401); ` +
    `JWKS fetches during the measured ${measuredSeconds.toFixed(1)} s: ${fetches} ` +
    `(${((fetches / measuredSeconds) * 60).toFixed(1)} per minute; bound: one per ` +
    `${REFETCH_SECONDS} s = ${(60 / REFETCH_SECONDS).toFixed(1)} per minute)`,
);
client.close();
process.exit(0);
