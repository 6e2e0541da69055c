/**
 * Bearer authentication per HTTP request: the service's server (`createHttpServer`) answering an
 * authenticated route with the remembered-token verifier (`createTokenVerifier`, what the
 * services use) against a verifier that checks the RS256 signature on every request (the
 * previous behaviour, the baseline), and against the same route without authentication (the
 * floor). Same process, same client (keep-alive, CONCURRENCY requests in flight, one token per
 * simulated user, USERS users), rounds alternating between the variants.
 *
 *   node --import tsx bench/http-auth.ts
 *
 * Env: REQUESTS (default 4000 per variant and round), ROUNDS (default 3), CONCURRENCY (default
 * 16), USERS (default 50). Client and server share the process and its cores, so CPU per
 * request counts both; the ratio between variants is what to read.
 */
import { cpus } from 'node:os';
import { createTokenVerifier, verifyAccessToken } from '../packages/auth/src/index.js';
import { bearerAuth, createHttpServer } from '../packages/http-server/src/index.js';
import { createLogger } from '../packages/logger/src/index.js';
import * as rounds from './support/bearer-rounds.js';

const { REQUESTS, ROUNDS, CONCURRENCY, USERS, keys, tokens } = await rounds.benchSetup();

async function serve(auth: 'remembered' | 'every request' | 'none'): Promise<number> {
  const app = createHttpServer({ logger: createLogger({ level: 'silent' }) });
  const verify =
    auth === 'remembered'
      ? createTokenVerifier(keys)
      : (token: string) => verifyAccessToken(keys, token);
  app.get('/me', auth === 'none' ? {} : { preHandler: bearerAuth(verify) }, async (req) => ({
    user: req.userId ?? null,
  }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return typeof address === 'object' && address ? address.port : 0;
}

const client = rounds.bearerClient(CONCURRENCY);
const round = (port: number) =>
  rounds.timedRound(REQUESTS, CONCURRENCY, async (i) => {
    const status = await client.get(port, tokens[i % USERS]!);
    if (status !== 200) throw new Error(`status ${status}`);
  });

const variants = [
  { name: 'signature checked on every request (baseline)', port: await serve('every request') },
  { name: 'remembered until expiry (createTokenVerifier)', port: await serve('remembered') },
  { name: 'no authentication (floor)', port: await serve('none') },
];
for (const v of variants) await round(v.port); // warm-up
const { results, loads } = await rounds.alternatingRounds(variants, ROUNDS, (v) => round(v.port));

console.log(
  `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model.trim()}; ${REQUESTS} requests × ` +
    `${ROUNDS} rounds per variant, ${CONCURRENCY} in flight, ${USERS} tokens; 1-min load ` +
    `${Math.min(...loads).toFixed(2)}–${Math.max(...loads).toFixed(2)}\n`,
);
rounds.printRoundsTable(variants, results, REQUESTS * ROUNDS, true);
client.close();
process.exit(0);
