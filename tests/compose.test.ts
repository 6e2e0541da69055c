/**
 * Checks docker-compose.yml, infra/nginx.conf and infra/Dockerfile against the code's own
 * configuration (roles, env schema, default port, WebSocket paths). No Docker engine is needed:
 * the files are parsed, the way Compose and nginx would read them.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ConfigError, DEFAULT_PORT, loadConfig, Role, type Config } from '@agent-backend/config';
import { WS_PATHS } from '@agent-backend/protocol';
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../scripts/service-defaults.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path: string) => readFileSync(join(root, path), 'utf8');

// ---------------------------------------------------------------------------------------------
// Compose model: merge keys resolved, `${VAR:-default}` interpolated with an empty environment
// (what `docker compose up` does with no .env file).
// ---------------------------------------------------------------------------------------------
interface Service {
  image?: string;
  build?: unknown;
  command?: string | string[];
  environment?: Record<string, unknown> | string[];
  volumes?: (string | { source?: string; target?: string })[];
  ports?: (string | number | { published?: string | number; target?: number })[];
  healthcheck?: { test?: string | string[]; disable?: boolean };
  depends_on?: string[] | Record<string, { condition?: string }>;
}

function interpolate(value: unknown): unknown {
  if (typeof value === 'string') {
    return value.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}/g,
      (match, _name, op, arg) =>
        match === '$$' ? '$' : op === ':-' || op === '-' ? String(arg) : '',
    );
  }
  if (Array.isArray(value)) return value.map(interpolate);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v)]));
  }
  return value;
}

const compose = interpolate(parse(read('docker-compose.yml'), { merge: true })) as {
  services?: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const services = compose.services ?? {};

const words = (command: string | string[] | undefined): string[] =>
  command === undefined ? [] : Array.isArray(command) ? command.map(String) : command.split(/\s+/);

function envOf(service: Service): Record<string, string> {
  const env = service.environment ?? {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry) => {
        const at = entry.indexOf('=');
        return at < 0 ? [entry, ''] : [entry.slice(0, at), entry.slice(at + 1)];
      }),
    );
  }
  return Object.fromEntries(
    Object.entries(env).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]),
  );
}

/** Mounts as `{ source, target }`, from short (`src:dst[:ro]`) or long syntax. */
const mountsOf = (service: Service) =>
  (service.volumes ?? []).map((v) => {
    if (typeof v !== 'string') return { source: v.source ?? '', target: v.target ?? '' };
    const [source = '', target = ''] = v.split(':');
    return { source, target };
  });

const dependsOn = (service: Service): Record<string, string | undefined> =>
  Array.isArray(service.depends_on)
    ? Object.fromEntries(service.depends_on.map((name) => [name, undefined]))
    : Object.fromEntries(
        Object.entries(service.depends_on ?? {}).map(([k, v]) => [k, v?.condition]),
      );

/** Application services: every service whose command starts a role entry. */
const roleEntry = /^apps\/([a-z-]+)\/dist\/main\.js$/;
const apps = Object.entries(services).flatMap(([name, service]) => {
  const entry = words(service.command).find((w) => roleEntry.test(w));
  const role = entry?.match(roleEntry)?.[1];
  return role ? [{ name, service, role, entry: entry as string, env: envOf(service) }] : [];
});
const appsOf = (role: string) => apps.filter((a) => a.role === role).map((a) => a.name);

// ---------------------------------------------------------------------------------------------
// nginx model: a small parser for nginx's block syntax (directives, `{}` blocks, quotes, `#`).
// ---------------------------------------------------------------------------------------------
interface Directive {
  name: string;
  args: string[];
  block?: Directive[];
}

function parseNginx(text: string): Directive[] {
  const tokens: string[] = [];
  const tokenPattern = /#[^\n]*|"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)'|([{};])|([^\s{};"'#]+)/g;
  for (const m of text.matchAll(tokenPattern)) {
    if (m[0].startsWith('#')) continue;
    tokens.push(m[1] ?? m[2] ?? m[3] ?? m[4] ?? '');
  }
  let at = 0;
  const readBlock = (): Directive[] => {
    const out: Directive[] = [];
    while (at < tokens.length && tokens[at] !== '}') {
      const name = tokens[at++] as string;
      const args: string[] = [];
      while (at < tokens.length && tokens[at] !== ';' && tokens[at] !== '{') {
        args.push(tokens[at++] as string);
      }
      if (tokens[at] === '{') {
        at++;
        out.push({ name, args, block: readBlock() });
        if (tokens[at++] !== '}') throw new Error(`nginx.conf: unclosed block "${name}"`);
      } else {
        if (tokens[at++] !== ';') throw new Error(`nginx.conf: "${name}" lacks a ";"`);
        out.push({ name, args });
      }
    }
    return out;
  };
  const tree = readBlock();
  if (at !== tokens.length) throw new Error('nginx.conf: unbalanced "}"');
  return tree;
}

const nginx = parseNginx(read('infra/nginx.conf'));
const http = nginx.find((d) => d.name === 'http')?.block ?? [];
const upstreams = new Map(
  http.filter((d) => d.name === 'upstream').map((d) => [d.args[0], d.block ?? []]),
);
const server = http.find((d) => d.name === 'server')?.block ?? [];
const locations = server.filter((d) => d.name === 'location');

/** The location nginx picks for a URI: exact `=` match, else the longest prefix. */
function locationFor(uri: string): Directive | undefined {
  const exact = locations.find((l) => l.args[0] === '=' && l.args[1] === uri);
  if (exact) return exact;
  return locations
    .filter((l) => l.args.length === 1 && uri.startsWith(l.args[0] as string))
    .sort((a, b) => (b.args[0] as string).length - (a.args[0] as string).length)[0];
}

const directive = (block: Directive[] | undefined, name: string) =>
  (block ?? []).find((d) => d.name === name);

/** proxy_set_header is inherited only by a block that sets none itself. */
function headersAt(location: Directive): Map<string, string> {
  const own = (location.block ?? []).filter((d) => d.name === 'proxy_set_header');
  const effective = own.length > 0 ? own : server.filter((d) => d.name === 'proxy_set_header');
  return new Map(effective.map((d) => [(d.args[0] ?? '').toLowerCase(), d.args[1] ?? '']));
}

/** Upstream servers of the location serving `uri`, as `host:port`. */
function upstreamServersFor(uri: string): { upstream: string; servers: string[] } {
  const location = locationFor(uri);
  if (!location) throw new Error(`nginx.conf: no location serves ${uri}`);
  const target = directive(location.block, 'proxy_pass')?.args[0] ?? '';
  const upstream = target.match(/^https?:\/\/([^/:]+)\/?$/)?.[1];
  if (!upstream || !upstreams.has(upstream)) {
    throw new Error(`nginx.conf: location ${location.args.join(' ')} proxies to "${target}",
      which is not one of the upstream blocks (${[...upstreams.keys()].join(', ')})`);
  }
  const servers = (upstreams.get(upstream) ?? [])
    .filter((d) => d.name === 'server')
    .map((d) => d.args[0] ?? '');
  return { upstream, servers };
}

const seconds = (value: string | undefined): number => {
  const m = value?.match(/^(\d+)(ms|s|m|h|d)?$/);
  if (!m) return 0;
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 }[m[2] ?? 's'] ?? 1;
  return Number(m[1]) * unit;
};

// ---------------------------------------------------------------------------------------------
// Key files: the compose paths are replaced by real PEM files, so loadConfig reads real keys.
// ---------------------------------------------------------------------------------------------
let keyDir = '';
let publicPem = '';
let privatePem = '';
const configs = new Map<string, Config>();

beforeAll(() => {
  keyDir = mkdtempSync(join(tmpdir(), 'compose-keys-'));
  const pair = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  publicPem = join(keyDir, 'public.pem');
  privatePem = join(keyDir, 'private.pem');
  writeFileSync(publicPem, pair.publicKey);
  writeFileSync(privatePem, pair.privateKey);
});

afterAll(() => rmSync(keyDir, { recursive: true, force: true }));

function configOf(app: (typeof apps)[number]): Config {
  const cached = configs.get(app.name);
  if (cached) return cached;
  const env = { ...app.env };
  if (env.JWT_PUBLIC_KEY_FILE) env.JWT_PUBLIC_KEY_FILE = publicPem;
  if (env.JWT_PRIVATE_KEY_FILE) env.JWT_PRIVATE_KEY_FILE = privatePem;
  try {
    const config = loadConfig(app.role as Role, env);
    configs.set(app.name, config);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) {
      throw new Error(
        `docker-compose.yml: service "${app.name}" (${app.role}) would refuse to start:\n` +
          error.problems.map((p) => `  - ${p}`).join('\n'),
      );
    }
    throw error;
  }
}

describe('docker-compose.yml', () => {
  it('is valid for the Compose Specification schema (infra/compose-spec, vendored)', () => {
    const schema = JSON.parse(read('infra/compose-spec/compose-spec.json')) as object;
    // The schema names its draft-07 meta-schema by an address Ajv does not know; it is draft-07.
    const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false });
    // ajv-formats is CommonJS: its default export is the plugin, or a module holding it.
    const plugin = addFormats as unknown as ((a: Ajv) => Ajv) & { default?: (a: Ajv) => Ajv };
    (plugin.default ?? plugin)(ajv);
    const validate = ajv.compile(schema);
    // As Compose reads it: merge keys resolved, before interpolation (the schema allows it).
    const file = parse(read('docker-compose.yml'), { merge: true }) as unknown;
    expect(validate(file) ? [] : validate.errors).toEqual([]);
    // And the schema is not a pass-everything: an unknown service key is refused.
    expect(validate({ services: { api: { image: 'x', replica: 2 } } })).toBe(false);
  });

  it('has redis, postgres, ≥2 api, ≥2 gateway, ≥1 worker and a load balancer', () => {
    for (const name of ['redis', 'postgres', 'lb']) {
      expect(services[name], `service "${name}" is missing`).toBeDefined();
    }
    expect(appsOf('api').length, `api replicas: ${appsOf('api')}`).toBeGreaterThanOrEqual(2);
    expect(appsOf('gateway').length, `gateways: ${appsOf('gateway')}`).toBeGreaterThanOrEqual(2);
    expect(appsOf('worker').length, `workers: ${appsOf('worker')}`).toBeGreaterThanOrEqual(1);
  });

  it('runs Redis with AOF persistence and noeviction (BullMQ keys must never be evicted)', () => {
    const command = words(services.redis?.command).join(' ');
    expect(command, 'redis command').toMatch(/--appendonly\s+yes\b/);
    expect(command, 'redis command').toMatch(/--maxmemory-policy\s+noeviction\b/);
    expect(mountsOf(services.redis ?? {}).map((m) => m.target)).toContain('/data');
    expect(services.postgres?.image, 'postgres image must ship pgvector').toMatch(/pgvector/);
  });

  it('starts every app service through an existing role entry', () => {
    expect(apps.length).toBeGreaterThan(0);
    for (const app of apps) {
      expect(Role.options, `service "${app.name}": unknown role "${app.role}"`).toContain(app.role);
      const source = `apps/${app.role}/src/main.ts`;
      expect(
        existsSync(join(root, source)),
        `service "${app.name}" runs ${app.entry}, but ${source} does not exist`,
      ).toBe(true);
    }
  });

  it('gives every app service an environment that passes loadConfig for its role', () => {
    for (const app of apps) {
      const config = configOf(app);
      expect(config.distributed, `service "${app.name}" must use Redis and PostgreSQL`).toBe(true);
      expect(new URL(config.REDIS_URL ?? '').hostname, `${app.name} REDIS_URL`).toBe('redis');
      const db = new URL(config.DATABASE_URL ?? '');
      const pg = envOf(services.postgres ?? {});
      expect(db.hostname, `${app.name} DATABASE_URL host`).toBe('postgres');
      expect(decodeURIComponent(db.username), `${app.name} DATABASE_URL user`).toBe(
        pg.POSTGRES_USER,
      );
      expect(decodeURIComponent(db.password), `${app.name} DATABASE_URL password`).toBe(
        pg.POSTGRES_PASSWORD,
      );
      expect(db.pathname, `${app.name} DATABASE_URL database`).toBe(`/${pg.POSTGRES_DB}`);
    }
    const ids = apps.map((a) => a.env.INSTANCE_ID);
    expect(ids.every(Boolean), `every replica sets INSTANCE_ID: ${ids}`).toBe(true);
    expect(new Set(ids).size, `INSTANCE_IDs must be unique: ${ids}`).toBe(ids.length);
  });

  it('mounts every key file from the volumes the one-shot keys service writes', () => {
    const keys = services.keys;
    expect(keys, 'service "keys" is missing').toBeDefined();
    expect(words(keys?.command)).toContain('infra/generate-keys.mjs');
    expect(existsSync(join(root, 'infra/generate-keys.mjs'))).toBe(true);
    const keysEnv = envOf(keys ?? {});
    const written = mountsOf(keys ?? {});
    for (const app of apps) {
      for (const name of ['JWT_PUBLIC_KEY_FILE', 'JWT_PRIVATE_KEY_FILE'] as const) {
        const path = app.env[name];
        if (!path) continue;
        expect(path, `${app.name} ${name} must be the path the keys service writes`).toBe(
          keysEnv[name],
        );
        const dir = posix.dirname(path);
        const own = mountsOf(app.service).find((m) => m.target === dir);
        const source = written.find((m) => m.target === dir)?.source;
        expect(own?.source, `${app.name} must mount the volume holding ${path}`).toBe(source);
        expect(compose.volumes ?? {}, `volume "${source}" is not declared`).toHaveProperty(
          source ?? '',
        );
        expect(dependsOn(app.service).keys, `${app.name} needs the keys first`).toBe(
          'service_completed_successfully',
        );
      }
    }
    // The runtime resolves keys in every split role (the worker verifies too), so every
    // replica needs at least the public key; the private key stays with the api.
    for (const app of apps) {
      expect(
        app.env.JWT_PUBLIC_KEY_FILE ?? app.env.JWT_PUBLIC_KEY,
        `${app.name}: public key`,
      ).toBeTruthy();
    }
    const privateOutsideApi = [...appsOf('gateway'), ...appsOf('worker')].flatMap(
      (n) => envOf(services[n] ?? {}).JWT_PRIVATE_KEY_FILE ?? [],
    );
    expect(privateOutsideApi, 'only api replicas sign tokens: no private key elsewhere').toEqual(
      [],
    );
  });

  it('waits for healthy Redis and PostgreSQL before starting an app service', () => {
    for (const app of apps) {
      const deps = dependsOn(app.service);
      expect(deps.redis, `${app.name} depends_on redis`).toBe('service_healthy');
      expect(deps.postgres, `${app.name} depends_on postgres`).toBe('service_healthy');
    }
  });

  it('listens on DEFAULT_PORT (or PORT) and health-checks /readyz or /healthz on it', () => {
    expect(DEFAULT_PORT).toBe(8000);
    for (const app of apps) {
      const port = configOf(app).PORT;
      expect(port, `${app.name} port`).toBe(Number(app.env.PORT ?? DEFAULT_PORT));
      const test = words(app.service.healthcheck?.test).join(' ');
      expect(test, `${app.name} healthcheck`).toMatch(new RegExp(`:${port}/(readyz|healthz)\\b`));
    }
    for (const name of ['redis', 'postgres', 'lb']) {
      expect(
        words(services[name]?.healthcheck?.test).length,
        `${name} healthcheck`,
      ).toBeGreaterThan(1);
    }
    expect(words(services.lb?.healthcheck?.test).join(' '), 'lb healthcheck').toMatch(
      /\/(readyz|healthz)\b/,
    );
  });

  it('publishes port 8000 on the load balancer only, mapped to the port nginx listens on', () => {
    const listen = Number(directive(server, 'listen')?.args[0]?.split(':').pop());
    const ports = (services.lb?.ports ?? []).map((p) => {
      if (typeof p === 'object')
        return { published: String(p.published), target: Number(p.target) };
      const parts = String(p).split(':');
      return { published: parts.at(-2) ?? '', target: Number(parts.at(-1)) };
    });
    expect(ports, 'lb ports').toContainEqual({ published: '8000', target: listen });
    expect(services.lb?.image, 'lb image').toMatch(/^nginx:/);
    expect(mountsOf(services.lb ?? {}).map((m) => m.source)).toContain('./infra/nginx.conf');
    for (const app of apps)
      expect(app.service.ports, `${app.name} must not publish ports`).toBeUndefined();
  });
});

describe('infra/nginx.conf', () => {
  const servicesAt = (role: string) =>
    appsOf(role)
      .map(
        (name) =>
          `${name}:${configOf(apps.find((a) => a.name === name) as (typeof apps)[number]).PORT}`,
      )
      .sort();

  it('routes every WebSocket path to exactly the gateway replicas, with upgrade headers', () => {
    expect(Object.values(WS_PATHS).length).toBeGreaterThan(0);
    for (const path of Object.values(WS_PATHS)) {
      const { upstream, servers } = upstreamServersFor(path);
      expect(servers.sort(), `${path} -> upstream "${upstream}"`).toEqual(servicesAt('gateway'));
      const location = locationFor(path) as Directive;
      const headers = headersAt(location);
      expect(headers.get('upgrade'), `${path}: proxy_set_header Upgrade`).toBe('$http_upgrade');
      expect(headers.get('connection'), `${path}: proxy_set_header Connection`).toMatch(/upgrade/);
      expect(headers.get('x-request-id'), `${path}: X-Request-Id`).toBeTruthy();
      expect(
        seconds(directive(location.block, 'proxy_read_timeout')?.args[0]),
      ).toBeGreaterThanOrEqual(300);
    }
    expect(directive(server, 'proxy_http_version')?.args[0]).toBe('1.1');
  });

  it('routes everything else to exactly the api replicas, unbuffered for SSE', () => {
    for (const path of ['/', '/api/agent/invoke', '/healthz', '/node/devices', '/ws']) {
      const { upstream, servers } = upstreamServersFor(path);
      expect(servers.sort(), `${path} -> upstream "${upstream}"`).toEqual(servicesAt('api'));
    }
    const location = locationFor('/api/agent/invoke') as Directive;
    expect(
      directive(location.block, 'proxy_buffering')?.args[0],
      'SSE needs proxy_buffering off',
    ).toBe('off');
    expect(
      seconds(directive(location.block, 'proxy_read_timeout')?.args[0]),
    ).toBeGreaterThanOrEqual(300);
    expect(headersAt(location).get('x-request-id'), 'X-Request-Id').toBeTruthy();
  });

  it('never logs query strings (WebSocket tokens may travel as ?token=)', () => {
    const formats = http
      .filter((d) => d.name === 'log_format')
      .map((d) => d.args.slice(1).join(''));
    expect(formats.length, 'a log_format of our own').toBeGreaterThan(0);
    for (const format of formats)
      expect(format).not.toMatch(/\$(request|request_uri|args|query_string)\b/);
    for (const log of http.filter((d) => d.name === 'access_log')) {
      expect(log.args[1], 'access_log uses our log_format').toBeDefined();
    }
  });
});

describe('infra/Dockerfile', () => {
  const dockerfile = read('infra/Dockerfile');

  it('builds on Node 24 LTS and runs as a non-root user with a /healthz healthcheck', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
    expect(dockerfile).toMatch(/--frozen-lockfile/);
    const cmd = dockerfile.match(/^CMD (\[.*\])$/m)?.[1];
    expect(JSON.parse(cmd ?? '[]')).toEqual(['node', 'apps/all-in-one/dist/main.js']);
    expect(existsSync(join(root, 'apps/all-in-one/src/main.ts')), 'all-in-one entry').toBe(true);
    expect(existsSync(join(root, 'infra/Dockerfile.dockerignore'))).toBe(true);
  });

  it('starts every process with the service defaults npm start uses (scripts/service-defaults.mjs)', () => {
    const env = dockerfile.slice(dockerfile.lastIndexOf('\nENV '));
    const options = /NODE_OPTIONS="([^"]*)"/.exec(env)?.[1]?.split(' ') ?? [];
    for (const flag of SERVICE_NODE_FLAGS) expect(options).toContain(flag);
    for (const [name, value] of Object.entries(SERVICE_ENV))
      expect(env).toMatch(new RegExp(`^\\s+${name}=${value}\\b`, 'm'));
  });

  it('creates the key mount points the compose services use, owned by that user', () => {
    const targets = Object.values(services).flatMap((s) =>
      mountsOf(s)
        .filter((m) => m.target.startsWith('/keys'))
        .map((m) => m.target),
    );
    for (const target of new Set(targets)) expect(dockerfile).toContain(target);
  });
});
