/**
 * The peer projects the benchmarks under `bench/peers/` compare the service with. They are not
 * dependencies of the repository (CI installs stay lean): `ensurePeers` installs them, at the
 * pinned versions below, into the scratch folder `bench/peers/.peers/` (gitignored) with
 * `npm install --prefix`, and `requirePeer` loads them from there. Their types are not
 * installed for the type checker either: each script declares the few members it uses.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the peers are installed. */
export const PEERS_DIR = fileURLToPath(new URL('./.peers/', import.meta.url));

/** Every peer, pinned. Change a version here and the next run installs it. */
export const PINNED = {
  'socket.io': '4.8.4',
  'socket.io-client': '4.8.4',
  '@socket.io/redis-adapter': '8.3.0',
  // The same ioredis as the service's, so the Redis client is not a difference.
  ioredis: '5.11.1',
  express: '5.3.0',
  autocannon: '9.0.0',
  '@openai/agents': '0.20.0',
  // The client @openai/agents 0.20 asks for (^7.2.0); the service's own is openai 6.
  openai: '7.57.0',
  zod: '4.6.7',
  // Mastra's agent; it calls an OpenAI-compatible server through its own `{ id, url, apiKey }`
  // model config, so no AI SDK provider package is needed.
  '@mastra/core': '1.71.0',
  '@langchain/langgraph': '1.7.3',
  '@langchain/openai': '1.6.0',
  // The core both LangChain packages above ask for (^1.2.13, ^1.3.4).
  '@langchain/core': '1.4.0',
} as const;

export type PeerName = keyof typeof PINNED;

const require = createRequire(join(PEERS_DIR, 'package.json'));

function installedVersion(name: PeerName): string | undefined {
  const file = join(PEERS_DIR, 'node_modules', name, 'package.json');
  if (!existsSync(file)) return undefined;
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * Installs every pinned peer that is missing or at another version (all of them in one
 * `npm install`, so the scratch folder always matches `PINNED`), and returns `name@version` of
 * the peers asked for, as installed.
 */
export function ensurePeers(names: readonly PeerName[]): string[] {
  const stale = (Object.keys(PINNED) as PeerName[]).filter(
    (name) => installedVersion(name) !== PINNED[name],
  );
  if (stale.length > 0) {
    mkdirSync(PEERS_DIR, { recursive: true });
    writeFileSync(
      join(PEERS_DIR, 'package.json'),
      `${JSON.stringify({ name: 'bench-peers', private: true, dependencies: PINNED }, null, 2)}\n`,
    );
    console.error(`installing peers into ${PEERS_DIR}: ${stale.join(', ')}`);
    execFileSync(
      'npm',
      ['install', '--prefix', PEERS_DIR, '--no-audit', '--no-fund', '--loglevel=error'],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  }
  return names.map((name) => `${name}@${installedVersion(name) ?? '?'}`);
}

/** Loads a peer from the scratch folder (call `ensurePeers` first). */
export function requirePeer<T>(name: PeerName | `${PeerName}/${string}`): T {
  return require(name) as T;
}

/** The path of a file inside an installed peer, e.g. autocannon's CLI. */
export function resolvePeer(name: string): string {
  return require.resolve(name);
}
