import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './index.js';

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the documented defaults for the all-in-one on an empty environment', () => {
    const config = loadConfig('all-in-one', {});
    expect(config).toMatchObject({
      PORT: 8000,
      HOST: '0.0.0.0',
      DATA_DIR: './.data',
      LOG_LEVEL: 'info',
      REDIS_KEY_PREFIX: 'ab:',
      MCP_ALLOW_PRIVATE_NETWORKS: false,
      MCP_STDIO_ALLOWLIST: [],
      distributed: false,
    });
    expect(config.REDIS_URL).toBeUndefined();
    expect(config.instanceId).toMatch(/^all-in-one-[0-9a-f]{8}$/);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('reports every problem at once', () => {
    const problems = problemsOf(() =>
      loadConfig('api', { PORT: 'eighty', REDIS_URL: 'http://x', LOG_LEVEL: 'loud' }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^PORT:/),
        expect.stringMatching(/^REDIS_URL: must be a URL with scheme redis or rediss/),
        expect.stringMatching(/^LOG_LEVEL:/),
      ]),
    );
    expect(problems.length).toBeGreaterThanOrEqual(3);
  });

  it('refuses split roles without Redis, PostgreSQL and keys', () => {
    expect(problemsOf(() => loadConfig('api', {}))).toEqual([
      'REDIS_URL: required for the api role (replicas share Redis)',
      'DATABASE_URL: required for the api role (replicas share PostgreSQL)',
      'JWT_PUBLIC_KEY: required for the api role (or JWT_PUBLIC_KEY_FILE, or JWT_KEYS_FILE)',
      'JWT_PRIVATE_KEY: required for the api role (or JWT_PRIVATE_KEY_FILE, or JWT_KEYS_FILE)',
    ]);
    expect(problemsOf(() => loadConfig('worker', {}))).toHaveLength(2);
    const gateway = loadConfig('gateway', {
      REDIS_URL: 'redis://127.0.0.1:6379',
      DATABASE_URL: 'postgres://localhost/test',
      JWT_PUBLIC_KEY: 'pem',
    });
    expect(gateway.distributed).toBe(true);
  });

  it('reads keys from files, unescapes inline PEM, and rejects both at once', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    writeFileSync(join(dir, 'pub.pem'), 'PUBLIC');
    const fromFile = loadConfig('all-in-one', { JWT_PUBLIC_KEY_FILE: join(dir, 'pub.pem') });
    expect(fromFile.jwtPublicKeyPem).toBe('PUBLIC');
    const inline = loadConfig('all-in-one', { JWT_PRIVATE_KEY: 'a\\nb' });
    expect(inline.jwtPrivateKeyPem).toBe('a\nb');
    expect(
      problemsOf(() =>
        loadConfig('all-in-one', {
          JWT_PUBLIC_KEY: 'x',
          JWT_PUBLIC_KEY_FILE: join(dir, 'missing.pem'),
        }),
      ),
    ).toEqual(['JWT_PUBLIC_KEY: set either JWT_PUBLIC_KEY or JWT_PUBLIC_KEY_FILE, not both']);
    expect(
      problemsOf(() => loadConfig('all-in-one', { JWT_PUBLIC_KEY_FILE: join(dir, 'missing.pem') })),
    ).toEqual([`JWT_PUBLIC_KEY_FILE: cannot read ${join(dir, 'missing.pem')} (ENOENT)`]);
  });

  it('treats empty strings as unset and parses lists and booleans', () => {
    const config = loadConfig('all-in-one', {
      REDIS_URL: '',
      MCP_STDIO_ALLOWLIST: ' npx , node,,',
      MCP_ALLOW_PRIVATE_NETWORKS: 'true',
    });
    expect(config.REDIS_URL).toBeUndefined();
    expect(config.MCP_STDIO_ALLOWLIST).toEqual(['npx', 'node']);
    expect(config.MCP_ALLOW_PRIVATE_NETWORKS).toBe(true);
    expect(
      problemsOf(() => loadConfig('all-in-one', { MCP_ALLOW_PRIVATE_NETWORKS: 'yes' })),
    ).toHaveLength(1);
  });

  it("refuses users' sandbox folders that hold or lie in the service's own folders", () => {
    const inData = problemsOf(() =>
      loadConfig('all-in-one', { DATA_DIR: '/srv/ab', SANDBOX_LOCAL_ROOT: '/srv/ab/users' }),
    );
    expect(inData).toEqual([
      expect.stringMatching(/^SANDBOX_LOCAL_ROOT: must not contain or lie in DATA_DIR/),
    ]);
    const holdingState = problemsOf(() =>
      loadConfig('all-in-one', {
        DATA_DIR: '/srv/ab',
        SANDBOX_STATE_DIR: '/srv/users/.state',
        SANDBOX_LOCAL_ROOT: '/srv/users/',
      }),
    );
    expect(holdingState).toEqual([
      expect.stringMatching(/^SANDBOX_LOCAL_ROOT: must not contain or lie in SANDBOX_STATE_DIR/),
    ]);
    expect(
      loadConfig('all-in-one', {
        DATA_DIR: '/srv/ab',
        SANDBOX_STATE_DIR: '/srv/state',
        SANDBOX_LOCAL_ROOT: '/srv/users',
      }).SANDBOX_LOCAL_ROOT,
    ).toBe('/srv/users');
    // Through a link: the users' folder is a link into the data folder.
    const dir = mkdtempSync(join(tmpdir(), 'cfg-sbx-'));
    mkdirSync(join(dir, 'data', 'users'), { recursive: true });
    symlinkSync(join(dir, 'data', 'users'), join(dir, 'users'));
    expect(
      problemsOf(() =>
        loadConfig('all-in-one', {
          DATA_DIR: join(dir, 'data'),
          SANDBOX_LOCAL_ROOT: join(dir, 'users'),
        }),
      ),
    ).toEqual([expect.stringMatching(/^SANDBOX_LOCAL_ROOT: must not contain or lie in DATA_DIR/)]);
  });

  it('requires E2B_API_KEY with the e2b cloud sandbox provider', () => {
    expect(problemsOf(() => loadConfig('all-in-one', { SANDBOX_CLOUD_PROVIDER: 'e2b' }))).toEqual([
      'E2B_API_KEY: required with SANDBOX_CLOUD_PROVIDER=e2b',
    ]);
    const config = loadConfig('all-in-one', {
      SANDBOX_CLOUD_PROVIDER: 'e2b',
      E2B_API_KEY: 'e2b_x',
      E2B_API_URL: '',
    });
    expect(config).toMatchObject({ E2B_TEMPLATE: 'code-interpreter-v1', E2B_API_URL: undefined });
    expect(
      problemsOf(() => loadConfig('all-in-one', { SANDBOX_CLOUD_PROVIDER: 'other' })),
    ).toHaveLength(1);
    expect(problemsOf(() => loadConfig('all-in-one', { E2B_API_URL: 'not a url' }))).toHaveLength(
      1,
    );
  });

  it('validates the embeddings settings together', () => {
    const config = loadConfig('all-in-one', {
      EMBEDDINGS_BASE_URL: 'http://embed.internal/v1',
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
      EMBEDDINGS_DIMENSIONS: '256',
    });
    expect(config).toMatchObject({
      EMBEDDINGS_DIMENSIONS: 256,
      EMBEDDINGS_BATCH_SIZE: 64,
      KNOWLEDGE_PGVECTOR: 'auto',
      KNOWLEDGE_REEMBED: 'auto',
    });
    expect(loadConfig('all-in-one', { EMBEDDINGS_DIMENSIONS: '' }).EMBEDDINGS_DIMENSIONS).toBe(
      undefined,
    );
    const problems = problemsOf(() =>
      loadConfig('worker', {
        EMBEDDINGS_BASE_URL: 'http://embed.internal/v1',
        EMBEDDINGS_DIMENSIONS: '0',
        KNOWLEDGE_PGVECTOR: 'maybe',
        KNOWLEDGE_REEMBED: 'always',
      }),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^EMBEDDINGS_MODEL: required with EMBEDDINGS_BASE_URL/),
        expect.stringMatching(/^EMBEDDINGS_DIMENSIONS:/),
        expect.stringMatching(/^KNOWLEDGE_PGVECTOR:/),
        expect.stringMatching(/^KNOWLEDGE_REEMBED:/),
      ]),
    );
    expect(problemsOf(() => loadConfig('all-in-one', { EMBEDDINGS_MODEL: 'm' }))).toEqual([
      expect.stringMatching(/^EMBEDDINGS_BASE_URL: required/),
    ]);
  });

  it('reads LLM_ALLOWED_ORIGINS as origins and names every entry that is not one', () => {
    const config = loadConfig('all-in-one', {
      LLM_ALLOWED_ORIGINS: ' http://127.0.0.1:11434, HTTP://LocalHost:1234/ ,,https://[::1]:8000',
    });
    expect(config.LLM_ALLOWED_ORIGINS).toEqual([
      'http://127.0.0.1:11434',
      'http://localhost:1234',
      'https://[::1]:8000',
    ]);
    expect(Object.isFrozen(config.LLM_ALLOWED_ORIGINS)).toBe(true);
    expect(loadConfig('all-in-one', {}).LLM_ALLOWED_ORIGINS).toEqual([]);
    expect(
      problemsOf(() =>
        loadConfig('all-in-one', {
          LLM_ALLOWED_ORIGINS:
            'http://127.0.0.1:11434/v1,127.0.0.1:1234,http://169.254.169.254,http://ok:1',
          PORT: 'x',
        }),
      ),
    ).toEqual([
      expect.stringMatching(/^PORT:/),
      'LLM_ALLOWED_ORIGINS: "http://127.0.0.1:11434/v1" must be an origin without a path (http://127.0.0.1:11434)',
      'LLM_ALLOWED_ORIGINS: "127.0.0.1:1234" is not an origin such as http://127.0.0.1:11434',
      'LLM_ALLOWED_ORIGINS: "http://169.254.169.254" is a cloud metadata address, which is never allowed',
    ]);
  });

  it('reads SKILLS_DIR as a path, empty meaning unset', () => {
    expect(loadConfig('all-in-one', {}).SKILLS_DIR).toBeUndefined();
    expect(loadConfig('all-in-one', { SKILLS_DIR: ' ' }).SKILLS_DIR).toBeUndefined();
    expect(loadConfig('all-in-one', { SKILLS_DIR: '/srv/skills' }).SKILLS_DIR).toBe('/srv/skills');
  });

  it("reads the OpenTelemetry sampler variables, the specification's default when unset", () => {
    expect(loadConfig('all-in-one', {})).toMatchObject({
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      OTEL_TRACES_SAMPLER_ARG: 1,
    });
    expect(
      loadConfig('all-in-one', {
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.1',
      }),
    ).toMatchObject({
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: 0.1,
    });
    // Empty is unset (1), not a ratio of 0.
    expect(loadConfig('all-in-one', { OTEL_TRACES_SAMPLER_ARG: '' }).OTEL_TRACES_SAMPLER_ARG).toBe(
      1,
    );
    const problems = problemsOf(() =>
      loadConfig('all-in-one', {
        OTEL_TRACES_SAMPLER: 'jaeger_remote',
        OTEL_TRACES_SAMPLER_ARG: '2',
      }),
    );
    expect(problems).toHaveLength(2);
    expect(problems.join('\n')).toContain('OTEL_TRACES_SAMPLER');
    expect(problems.join('\n')).toContain('OTEL_TRACES_SAMPLER_ARG');
  });

  it('takes REDIS_MODE with its own variables, and reports the ones missing or out of place', () => {
    expect(loadConfig('all-in-one', {}).REDIS_MODE).toBe('standalone');
    const cluster = loadConfig('all-in-one', {
      REDIS_MODE: 'cluster',
      REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7000',
    });
    expect(cluster.REDIS_CLUSTER_NODES).toEqual(['10.0.0.1:7000', '10.0.0.2:7000']);
    // REDIS_URL turns the Redis engines on; it defaults to the first node.
    expect(cluster.REDIS_URL).toBe('redis://10.0.0.1:7000');
    const sentinel = loadConfig('all-in-one', {
      REDIS_MODE: 'sentinel',
      REDIS_SENTINELS: 's1:26379,s2:26379',
      REDIS_SENTINEL_NAME: 'main',
      REDIS_URL: 'redis://:secret@ignored:6379/2',
    });
    expect(sentinel.REDIS_URL).toBe('redis://:secret@ignored:6379/2');
    expect(
      problemsOf(() =>
        loadConfig('all-in-one', { REDIS_MODE: 'sentinel', REDIS_SENTINELS: 'no-port' }),
      ),
    ).toEqual(['REDIS_SENTINELS: must be comma-separated host:port entries']);
    expect(
      problemsOf(() =>
        loadConfig('all-in-one', { REDIS_MODE: 'sentinel', REDIS_CLUSTER_NODES: 'a:1' }),
      ),
    ).toEqual([
      'REDIS_CLUSTER_NODES: only used with REDIS_MODE=cluster',
      'REDIS_SENTINELS: required with REDIS_MODE=sentinel',
      'REDIS_SENTINEL_NAME: required with REDIS_MODE=sentinel',
    ]);
    expect(problemsOf(() => loadConfig('all-in-one', { REDIS_MODE: 'cluster' }))).toEqual([
      'REDIS_CLUSTER_NODES: required with REDIS_MODE=cluster',
    ]);
    // The sentinels' own credentials: only where there are sentinels.
    expect(
      loadConfig('all-in-one', {
        REDIS_MODE: 'sentinel',
        REDIS_SENTINELS: 's1:26379',
        REDIS_SENTINEL_NAME: 'main',
        REDIS_SENTINEL_PASSWORD: 'sentinel-secret',
      }).REDIS_SENTINEL_PASSWORD,
    ).toBe('sentinel-secret');
    expect(
      problemsOf(() =>
        loadConfig('all-in-one', { REDIS_URL: 'redis://r:6379', REDIS_SENTINEL_PASSWORD: 'x' }),
      ),
    ).toEqual([
      'REDIS_SENTINEL_PASSWORD: only used with REDIS_MODE=sentinel (so is REDIS_SENTINEL_USERNAME)',
    ]);
  });
});
