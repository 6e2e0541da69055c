/**
 * The text rules and size limits, fuzzed: NUL characters, unpaired surrogates, deep nesting
 * and oversized values sent to every HTTP route the apps register (read from their source, so a
 * new route is fuzzed without editing this file), in the body, the path parameters and the
 * query, on the embedded all-in-one (PGlite) and on an API replica on PostgreSQL and Redis. The
 * operator API's routes (`router.<method>(...)`) are served (`ADMIN_TOKEN` set) and sent the
 * operator credential, so the text rules are reached behind it. No answer may be a 5xx, and
 * every refusal has the documented `{ error: { code, message } }` shape.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { accessToken, startAgentCluster, type AgentCluster } from '../agent-helpers.js';
import { keyFiles, requireBuild, tempDir } from '../helpers.js';

const SECRET = 'fuzz-internal-secret';
const ADMIN_TOKEN = 'fuzz-operator-credential-0123456789';

/**
 * Every `app.<method>('<path>'` registration under apps/<app>/src, and every operator route
 * (`router.<method>('<path>'`, the operator router's registrations).
 */
function registeredRoutes(): Array<{ method: string; path: string }> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.test.ts')) files.push(path);
    }
  };
  for (const app of readdirSync('apps')) walk(join('apps', app, 'src'));
  const routes = new Map<string, { method: string; path: string }>();
  for (const file of files) {
    const source = readFileSync(file, 'utf8');
    const registrations = /\b(?:app|router)\.(get|post|put|patch|delete)\(\s*'([^']+)'/g;
    for (const match of source.matchAll(registrations)) {
      const route = { method: match[1]!.toUpperCase(), path: match[2]! };
      routes.set(`${route.method} ${route.path}`, route);
    }
  }
  return [...routes.values()];
}

const NUL = 'a\u0000b';
const deep = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

/** Bodies that must be refused: each variant of hostile text, in a body of plausible fields. */
const hostileBodies: Array<[string, string]> = [
  ['NUL in a field', JSON.stringify({ name: NUL, message: NUL, query: NUL, task_id: NUL })],
  ['NUL deep in a free-form value', JSON.stringify({ task: { notification_config: { x: NUL } } })],
  ['unpaired surrogate', `{"name":"a\\ud800b","message":"x","query":"x"}`],
  ['NUL in a key', JSON.stringify({ ['k\u0000']: 1 })],
  ['10,000 levels of nesting', deep(10_000)],
  [
    'nesting inside a real field',
    `{"action":"add","task_id":"t","task":{"notification_config":${deep(200)}}}`,
  ],
  ['5 MiB string', JSON.stringify({ name: 'x'.repeat(5 * 1024 * 1024) })],
];

interface Target {
  readonly url: string;
  readonly token: string;
}

async function attack(target: Target, method: string, path: string, body?: string) {
  const operator = path.startsWith('/api/operator/');
  const res = await fetch(`${target.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${operator ? ADMIN_TOKEN : target.token}`,
      'x-internal-secret': SECRET,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  return { status: res.status, text };
}

/** `{ error: { code, message } }`, the shape of every refusal of these requests. */
function hasErrorShape(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const error = (value as { error: unknown }).error;
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as { code?: unknown }).code === 'string' &&
    typeof (error as { message?: unknown }).message === 'string'
  );
}

function fuzz(name: string, target: () => Target) {
  describe(name, () => {
    const routes = registeredRoutes();

    it('finds the routes it fuzzes', () => {
      expect(routes.length).toBeGreaterThan(20);
      expect(routes).toContainEqual({ method: 'POST', path: '/scheduled-task/sync' });
      expect(routes).toContainEqual({
        method: 'POST',
        path: '/api/operator/users/:user_id/erase',
      });
    });

    it('refuses hostile text and nesting in bodies, paths and queries, never with a 5xx', async () => {
      const failures: string[] = [];
      for (const route of routes) {
        const withParams = (value: string) =>
          route.path.replace(/:[A-Za-z_]+/g, encodeURIComponent(value));
        // (An unpaired surrogate cannot be percent-encoded: `%ED%A0%80` is invalid UTF-8 and is
        // decoded to U+FFFD, which is well-formed text; in JSON bodies it can, see below.)
        const cases: Array<[string, string, string | undefined]> = [
          ['NUL in the query', `${withParams('x')}?q=${encodeURIComponent(NUL)}`, undefined],
        ];
        if (route.path.includes(':')) cases.push(['NUL in the path', withParams(NUL), undefined]);
        if (route.method !== 'GET') {
          for (const [label, body] of hostileBodies) cases.push([label, withParams('x'), body]);
        }
        for (const [label, path, body] of cases) {
          const { status, text } = await attack(target(), route.method, path, body);
          const where = `${route.method} ${route.path} (${label}): ${status} ${text.slice(0, 120)}`;
          // Every hostile request is refused (4xx), none crashes (5xx) or gets through (2xx).
          if (status < 400 || status >= 500) {
            failures.push(where);
            continue;
          }
          // An operator route refused at its credential would not have reached the text rules.
          if (route.path.startsWith('/api/operator/') && status === 401) {
            failures.push(`${where}: refused at the operator credential`);
            continue;
          }
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            failures.push(`${where}: not JSON`);
            continue;
          }
          if (!hasErrorShape(parsed)) failures.push(`${where}: not the documented shape`);
        }
      }
      expect(failures).toEqual([]);
    }, 120_000);
  });
}

describe('text fuzz over every route', () => {
  const keys = keyFiles();
  let embedded: ServiceProcess;
  let cluster: AgentCluster;
  let embeddedToken: string;
  let clusterToken: string;

  beforeAll(async () => {
    requireBuild('apps/all-in-one/dist/main.js');
    [embedded, cluster] = await Promise.all([
      startServiceProcess({
        entry: 'apps/all-in-one/dist/main.js',
        env: {
          DATA_DIR: tempDir('fuzz'),
          JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
          JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
          INTERNAL_API_SECRET: SECRET,
          ADMIN_TOKEN,
        },
      }),
      startAgentCluster({ INTERNAL_API_SECRET: SECRET, ADMIN_TOKEN }),
    ]);
    embeddedToken = await accessToken(keys.privateKey, 'fuzzer');
    clusterToken = await cluster.token('fuzzer');
  }, 120_000);
  afterAll(async () => {
    await embedded?.stop('SIGKILL');
    await cluster?.stop();
  });

  fuzz('embedded all-in-one (PGlite)', () => ({ url: embedded.url, token: embeddedToken }));
  fuzz('api replica on PostgreSQL and Redis', () => ({
    url: cluster.api[0]!.url,
    token: clusterToken,
  }));
});
