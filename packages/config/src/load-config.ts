import { readFileSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { EnvSchema, type Env, type Role } from './schema.js';

/** A validated, frozen configuration for one role. */
export interface Config extends Env {
  readonly role: Role;
  /** Resolved INSTANCE_ID (random when unset). */
  readonly instanceId: string;
  /** PEM contents, read from `JWT_*_KEY` or `JWT_*_KEY_FILE`. */
  readonly jwtPublicKeyPem: string | undefined;
  readonly jwtPrivateKeyPem: string | undefined;
  /** True when Redis and PostgreSQL back the engines (REDIS_URL and DATABASE_URL set). */
  readonly distributed: boolean;
}

/** Every problem found in the environment, reported at once. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Roles that run as separate replicas and therefore need the shared engines and shared keys. */
const needsKeys: Record<Role, { publicKey: boolean; privateKey: boolean }> = {
  'all-in-one': { publicKey: false, privateKey: false },
  api: { publicKey: true, privateKey: true },
  gateway: { publicKey: true, privateKey: false },
  worker: { publicKey: false, privateKey: false },
};

/**
 * Validates the environment for `role`. Throws {@link ConfigError} listing every problem.
 *
 * The split roles refuse to start without `REDIS_URL` and `DATABASE_URL` (their state must be
 * shared with the other replicas) and without configured JWT keys (replicas generating their
 * own keys would reject each other's tokens). The all-in-one generates keys into `DATA_DIR`.
 */
export function loadConfig(role: Role, env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      problems.push(`${issue.path.join('.') || '(environment)'}: ${issue.message}`);
    }
  }
  const values = parsed.success ? parsed.data : undefined;

  const readPem = (name: 'JWT_PUBLIC_KEY' | 'JWT_PRIVATE_KEY'): string | undefined => {
    const inline = values?.[name];
    const file = values?.[`${name}_FILE`];
    if (inline && file) {
      problems.push(`${name}: set either ${name} or ${name}_FILE, not both`);
      return undefined;
    }
    if (file) {
      try {
        return readFileSync(file, 'utf8');
      } catch (error) {
        problems.push(
          `${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`,
        );
        return undefined;
      }
    }
    // PEM in an environment variable often arrives with literal "\n" sequences.
    return inline?.replace(/\\n/g, '\n');
  };
  const jwtPublicKeyPem = readPem('JWT_PUBLIC_KEY');
  const jwtPrivateKeyPem = readPem('JWT_PRIVATE_KEY');

  if (values) resolveRedisMode(values, problems);

  if (role !== 'all-in-one' && values) {
    if (!values.REDIS_URL)
      problems.push(`REDIS_URL: required for the ${role} role (replicas share Redis)`);
    if (!values.DATABASE_URL)
      problems.push(`DATABASE_URL: required for the ${role} role (replicas share PostgreSQL)`);
    // A key set file holds both keys.
    const keySet = Boolean(values.JWT_KEYS_FILE);
    if (needsKeys[role].publicKey && !jwtPublicKeyPem && !values.JWT_PUBLIC_KEY_FILE && !keySet)
      problems.push(
        `JWT_PUBLIC_KEY: required for the ${role} role (or JWT_PUBLIC_KEY_FILE, or JWT_KEYS_FILE)`,
      );
    if (needsKeys[role].privateKey && !jwtPrivateKeyPem && !values.JWT_PRIVATE_KEY_FILE && !keySet)
      problems.push(
        `JWT_PRIVATE_KEY: required for the ${role} role (or JWT_PRIVATE_KEY_FILE, or JWT_KEYS_FILE)`,
      );
  }

  if (values?.METRICS_PORT !== undefined && values.METRICS_PORT === values.PORT)
    problems.push('METRICS_PORT: must differ from PORT (unset it to serve /metrics on PORT)');

  // On the raw environment, so these are reported along with any parse problem.
  const isSet = (name: string) => Boolean(env[name]?.trim());
  if (isSet('AUTH_JWKS_URL') && !isSet('AUTH_ISSUER'))
    problems.push('AUTH_ISSUER: required with AUTH_JWKS_URL');
  if (isSet('AUTH_JWKS_URL') && !isSet('AUTH_AUDIENCE'))
    problems.push(
      'AUTH_AUDIENCE: required with AUTH_JWKS_URL (else tokens for any app of the provider would pass)',
    );
  if (isSet('EMBEDDINGS_BASE_URL') && !isSet('EMBEDDINGS_MODEL'))
    problems.push('EMBEDDINGS_MODEL: required with EMBEDDINGS_BASE_URL');
  if (!isSet('EMBEDDINGS_BASE_URL') && (isSet('EMBEDDINGS_MODEL') || isSet('EMBEDDINGS_API_KEY')))
    problems.push('EMBEDDINGS_BASE_URL: required with EMBEDDINGS_MODEL or EMBEDDINGS_API_KEY');

  if (env.SANDBOX_CLOUD_PROVIDER?.trim() === 'e2b' && !isSet('E2B_API_KEY'))
    problems.push('E2B_API_KEY: required with SANDBOX_CLOUD_PROVIDER=e2b');
  if (values?.SANDBOX_LOCAL_ROOT) sandboxFoldersApart(values, problems);

  if (problems.length > 0 || !values) throw new ConfigError(problems);
  return Object.freeze({
    ...values,
    MCP_STDIO_ALLOWLIST: Object.freeze([...values.MCP_STDIO_ALLOWLIST]) as string[],
    GATEWAY_WEB_ORIGINS: Object.freeze([...values.GATEWAY_WEB_ORIGINS]) as string[],
    LLM_ALLOWED_ORIGINS: Object.freeze([...values.LLM_ALLOWED_ORIGINS]) as string[],
    CORS_ALLOWED_ORIGINS: Object.freeze([...values.CORS_ALLOWED_ORIGINS]) as string[],
    role,
    instanceId: values.INSTANCE_ID ?? `${role}-${randomBytes(4).toString('hex')}`,
    jwtPublicKeyPem,
    jwtPrivateKeyPem,
    distributed: Boolean(values.REDIS_URL && values.DATABASE_URL),
  });
}

/**
 * Checks the variables of `REDIS_MODE` go together, and gives a Cluster or Sentinel deployment
 * without `REDIS_URL` one (`redis://` + its first node or sentinel), since `REDIS_URL` is what
 * turns the Redis engines on.
 */
function resolveRedisMode(values: Env, problems: string[]): void {
  const mode = values.REDIS_MODE;
  if (mode === 'cluster' && values.REDIS_CLUSTER_NODES.length === 0)
    problems.push('REDIS_CLUSTER_NODES: required with REDIS_MODE=cluster');
  if (mode !== 'cluster' && values.REDIS_CLUSTER_NODES.length > 0)
    problems.push('REDIS_CLUSTER_NODES: only used with REDIS_MODE=cluster');
  if (mode === 'sentinel' && values.REDIS_SENTINELS.length === 0)
    problems.push('REDIS_SENTINELS: required with REDIS_MODE=sentinel');
  if (mode === 'sentinel' && !values.REDIS_SENTINEL_NAME)
    problems.push('REDIS_SENTINEL_NAME: required with REDIS_MODE=sentinel');
  if (mode !== 'sentinel' && (values.REDIS_SENTINELS.length > 0 || values.REDIS_SENTINEL_NAME))
    problems.push(
      'REDIS_SENTINELS: only used with REDIS_MODE=sentinel (so is REDIS_SENTINEL_NAME)',
    );
  if (mode !== 'sentinel' && (values.REDIS_SENTINEL_PASSWORD || values.REDIS_SENTINEL_USERNAME))
    problems.push(
      'REDIS_SENTINEL_PASSWORD: only used with REDIS_MODE=sentinel (so is REDIS_SENTINEL_USERNAME)',
    );
  const first = mode === 'cluster' ? values.REDIS_CLUSTER_NODES[0] : values.REDIS_SENTINELS[0];
  if (mode !== 'standalone' && !values.REDIS_URL && first) values.REDIS_URL = `redis://${first}`;
}

/** {@link loadConfig}, but prints every problem to stderr and exits 1 instead of throwing. */
export function loadConfigOrExit(role: Role, env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(role, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${role}: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/**
 * The users' folders of local sandboxes must not hold, or lie in, the service's own (`DATA_DIR`:
 * the database and keys of the all-in-one; `SANDBOX_STATE_DIR`: every sandbox's `/tmp`): a user
 * whose id names one of them would get it as a working directory.
 */
function sandboxFoldersApart(
  values: { DATA_DIR: string; SANDBOX_LOCAL_ROOT?: string; SANDBOX_STATE_DIR?: string },
  problems: string[],
): void {
  // Through links where the folders exist already (a linked folder is the folder it leads to).
  const real = (dir: string) => {
    try {
      return realpathSync(dir);
    } catch {
      return resolve(dir);
    }
  };
  const within = (outer: string, inner: string) => {
    const path = relative(real(outer), real(inner));
    return path === '' || (!path.startsWith('..') && !isAbsolute(path));
  };
  const root = values.SANDBOX_LOCAL_ROOT!;
  const own = [
    ['DATA_DIR', values.DATA_DIR],
    ['SANDBOX_STATE_DIR', values.SANDBOX_STATE_DIR ?? join(values.DATA_DIR, 'sandboxes')],
  ] as const;
  for (const [name, dir] of own)
    if (within(root, dir) || within(dir, root))
      problems.push(
        `SANDBOX_LOCAL_ROOT: must not contain or lie in ${name} (${dir}): users' working directories would reach the service's own files`,
      );
}
