import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';

/**
 * A fake of E2B (`cloud` sandboxes) on loopback that speaks E2B's wire protocol, so the
 * real `e2b` SDK runs against it unchanged:
 *
 * - the control API (`apiUrl`): `POST /v2/sandboxes`, `POST /v2/sandboxes/{id}/connect`,
 *   `POST /sandboxes/{id}/pause`, `DELETE /sandboxes/{id}`, `GET /v2/sandboxes` (metadata and
 *   state filters, `x-next-token` pages), `X-API-KEY` checked, errors as `{ code, message }`;
 * - envd (`sandboxUrl`, one origin for every sandbox, told apart by the `E2b-Sandbox-Id` header as
 *   E2B's own sandbox proxy does): `GET`/`POST /files` (multipart or octet-stream), the Connect
 *   RPCs `process.Process/Start` (server streaming, `application/connect+json` envelopes),
 *   `process.Process/SendSignal` and `filesystem.Filesystem/ListDir` (unary JSON), the
 *   `X-Access-Token` checked, 502 for a sandbox that is not running.
 *
 * Behind it each sandbox is a directory: its home (`/home/user`) and `/tmp`, and processes run in
 * bubblewrap with those two mounted, so absolute paths inside mean what they mean in E2B. A
 * sandbox past its timeout is paused (`autoPause`) or killed, as E2B does.
 */
export interface FakeE2B {
  /** `E2B_API_URL`. */
  readonly apiUrl: string;
  /** `E2B_SANDBOX_URL`. */
  readonly sandboxUrl: string;
  readonly apiKey: string;
  /** The sandboxes as the provider sees them (killed ones are gone). */
  readonly sandboxes: ReadonlyMap<string, FakeE2BSandbox>;
  /** Every request, in order (method and path). */
  readonly requests: Array<{ readonly method: string; readonly path: string }>;
  /** The largest page `GET /v2/sandboxes` answers (E2B's is 100); lower it to test paging. */
  pageSize: number;
  /**
   * Sandbox ids whose control-API requests (connect, pause, kill) answer 500, as E2B does when
   * one sandbox's host is in trouble; remove an id to let it through again.
   */
  readonly failing: Set<string>;
  /**
   * While true, `POST /v2/sandboxes` creates the sandbox (it runs, and lists with its metadata)
   * but holds back its answer until {@link releaseCreates}: the window in which a client that
   * dies never learns the sandbox's id.
   */
  holdCreates: boolean;
  /** Sends the held create answers (the connection may be gone by then). */
  releaseCreates(): void;
  /** Processes running in a sandbox now. */
  running(id: string): number;
  close(): Promise<void>;
}

export interface FakeE2BSandbox {
  readonly id: string;
  readonly templateID: string;
  readonly metadata: Record<string, string>;
  state: 'running' | 'paused';
  readonly startedAt: Date;
  endAt: Date;
  readonly autoPause: boolean;
  readonly envdAccessToken: string;
  /** Host directories behind `/home/user` and `/tmp`. */
  readonly home: string;
  readonly tmp: string;
}

const HOME = '/home/user';
const ENVD_VERSION = '0.5.11';

interface Live extends FakeE2BSandbox {
  readonly processes: Map<number, ChildProcess>;
}

export async function startFakeE2B(options: { apiKey?: string } = {}): Promise<FakeE2B> {
  const apiKey = options.apiKey ?? `e2b_${randomBytes(12).toString('hex')}`;
  const base = await mkdtemp(join(tmpdir(), 'fake-e2b-'));
  const sandboxes = new Map<string, Live>();
  const requests: Array<{ method: string; path: string }> = [];
  const failing = new Set<string>();
  let heldCreates: Array<() => void> = [];
  let nextPid = 100;

  /** Applies E2B's lifecycle lazily: a sandbox past `endAt` is paused or killed. */
  const current = async (id: string): Promise<Live | undefined> => {
    const sandbox = sandboxes.get(id);
    if (sandbox && sandbox.state === 'running' && sandbox.endAt.getTime() <= Date.now()) {
      if (sandbox.autoPause) stopProcesses(sandbox, 'paused');
      else await kill(sandbox);
    }
    return sandboxes.get(id);
  };
  const stopProcesses = (sandbox: Live, state: Live['state']) => {
    for (const child of sandbox.processes.values()) killTree(child);
    sandbox.processes.clear();
    sandbox.state = state;
  };
  const kill = async (sandbox: Live) => {
    stopProcesses(sandbox, 'paused');
    sandboxes.delete(sandbox.id);
    await rm(join(base, sandbox.id), { recursive: true, force: true });
  };

  const api = createServer((req, res) => {
    void handleApi(req, res).catch((error: unknown) => fail(res, 500, String(error)));
  });
  const handleApi = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push({ method: req.method ?? '', path: url.pathname });
    if (req.headers['x-api-key'] !== apiKey) return fail(res, 401, 'Invalid API key');
    const body = req.method === 'GET' || req.method === 'DELETE' ? {} : await readJson(req);
    let match: RegExpMatchArray | null;
    const named = url.pathname.match(/^(?:\/v2)?\/sandboxes\/([^/]+)/);
    if (named && failing.has(decodeURIComponent(named[1]!))) {
      return fail(res, 500, 'Internal server error');
    }
    if (req.method === 'POST' && url.pathname === '/v2/sandboxes') {
      const id = `i${randomBytes(10).toString('hex')}`;
      const dir = join(base, id);
      await mkdir(join(dir, 'home'), { recursive: true });
      await mkdir(join(dir, 'tmp'), { recursive: true });
      const timeout = typeof body.timeout === 'number' ? body.timeout : 300;
      const sandbox: Live = {
        id,
        templateID: typeof body.templateID === 'string' ? body.templateID : 'base',
        metadata: isStringRecord(body.metadata) ? body.metadata : {},
        state: 'running',
        startedAt: new Date(),
        endAt: new Date(Date.now() + timeout * 1000),
        autoPause: body.autoPause === true,
        envdAccessToken: randomBytes(16).toString('hex'),
        home: join(dir, 'home'),
        tmp: join(dir, 'tmp'),
        processes: new Map(),
      };
      sandboxes.set(id, sandbox);
      if (fake.holdCreates) await new Promise<void>((resolve) => heldCreates.push(resolve));
      if (res.destroyed) return;
      return json(res, 201, created(sandbox));
    }
    if (
      req.method === 'POST' &&
      (match = url.pathname.match(/^\/v2\/sandboxes\/([^/]+)\/connect$/))
    ) {
      const sandbox = await current(decodeURIComponent(match[1]!));
      if (!sandbox) return fail(res, 404, `sandbox ${match[1]} not found`);
      const timeout = typeof body.timeout === 'number' ? body.timeout : 300;
      const resumed = sandbox.state === 'paused';
      sandbox.state = 'running';
      sandbox.endAt = new Date(Math.max(sandbox.endAt.getTime(), Date.now() + timeout * 1000));
      return json(res, resumed ? 201 : 200, created(sandbox));
    }
    if (req.method === 'POST' && (match = url.pathname.match(/^\/sandboxes\/([^/]+)\/pause$/))) {
      const sandbox = await current(decodeURIComponent(match[1]!));
      if (!sandbox) return fail(res, 404, `sandbox ${match[1]} not found`);
      if (sandbox.state === 'paused') return fail(res, 409, 'sandbox is already paused');
      stopProcesses(sandbox, 'paused');
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'DELETE' && (match = url.pathname.match(/^\/sandboxes\/([^/]+)$/))) {
      const sandbox = await current(decodeURIComponent(match[1]!));
      if (!sandbox) return fail(res, 404, `sandbox ${match[1]} not found`);
      await kill(sandbox);
      res.writeHead(204).end();
      return;
    }
    if (req.method === 'GET' && url.pathname === '/v2/sandboxes') {
      // `metadata` is itself a query string (`key=value&...`, each part URI-encoded).
      const wanted = new URLSearchParams(url.searchParams.get('metadata') ?? '');
      const states = (url.searchParams.get('state') ?? 'running,paused').split(',');
      const limit = Math.min(Number(url.searchParams.get('limit') ?? 100), fake.pageSize);
      const from = Number(url.searchParams.get('nextToken') ?? 0);
      const all: Live[] = [];
      for (const id of [...sandboxes.keys()]) {
        const sandbox = await current(id);
        if (!sandbox || !states.includes(sandbox.state)) continue;
        const matches = [...wanted].every(
          ([key, value]) => sandbox.metadata[decodeURIComponent(key)] === decodeURIComponent(value),
        );
        if (matches) all.push(sandbox);
      }
      const page = all.slice(from, from + limit);
      if (from + limit < all.length) res.setHeader('x-next-token', String(from + limit));
      return json(
        res,
        200,
        page.map((s) => ({
          sandboxID: s.id,
          templateID: s.templateID,
          clientID: 'fake',
          startedAt: s.startedAt.toISOString(),
          endAt: s.endAt.toISOString(),
          cpuCount: 2,
          memoryMB: 512,
          diskSizeMB: 1024,
          metadata: s.metadata,
          state: s.state,
          envdVersion: ENVD_VERSION,
        })),
      );
    }
    return fail(res, 404, `no route ${req.method} ${url.pathname}`);
  };

  const envd = createServer((req, res) => {
    void handleEnvd(req, res).catch((error: unknown) => {
      if (!res.headersSent) fail(res, 500, String(error));
      else res.destroy();
    });
  });
  const handleEnvd = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push({ method: req.method ?? '', path: url.pathname });
    const sandbox = await current(String(req.headers['e2b-sandbox-id'] ?? ''));
    if (!sandbox || sandbox.state !== 'running') {
      return fail(res, 502, 'The sandbox was not found or is not running');
    }
    if (url.pathname === '/health') return void res.writeHead(204).end();
    if (req.headers['x-access-token'] !== sandbox.envdAccessToken) {
      return fail(res, 401, 'invalid access token');
    }
    const toHost = (path: string) => hostPath(sandbox, path);
    if (url.pathname === '/files' && req.method === 'GET') {
      const host = toHost(url.searchParams.get('path') ?? '');
      if (!host) return fail(res, 400, 'path outside the fake sandbox');
      const info = await lstat(host).catch(() => undefined);
      if (!info) return fail(res, 404, `file not found`);
      if (!info.isFile()) return fail(res, 400, 'path is a directory');
      const data = await readFile(host);
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-length': data.length,
      });
      res.end(data);
      return;
    }
    if (url.pathname === '/files' && req.method === 'POST') {
      const files: Array<{ path: string; data: Uint8Array }> = [];
      const queryPath = url.searchParams.get('path');
      if (String(req.headers['content-type']).startsWith('multipart/form-data')) {
        const form = await new Response(await readAll(req), {
          headers: { 'content-type': String(req.headers['content-type']) },
        }).formData();
        for (const entry of form.getAll('file')) {
          if (typeof entry === 'string') continue;
          files.push({
            path: queryPath ?? entry.name,
            data: new Uint8Array(await entry.arrayBuffer()),
          });
        }
      } else {
        files.push({ path: queryPath ?? '', data: await readAll(req) });
      }
      const written = [];
      for (const file of files) {
        const host = toHost(file.path);
        if (!host) return fail(res, 400, 'path outside the fake sandbox');
        await mkdir(dirname(host), { recursive: true });
        await writeFile(host, file.data);
        const inside = posix.resolve(HOME, file.path);
        written.push({ name: posix.basename(inside), type: 'file', path: inside });
      }
      return json(res, 200, written);
    }
    if (req.method !== 'POST') return fail(res, 404, 'not found');
    if (url.pathname === '/filesystem.Filesystem/ListDir') {
      const { path, depth } = (await readJson(req)) as { path?: string; depth?: number };
      const host = toHost(path ?? '');
      const info = host ? await lstat(host).catch(() => undefined) : undefined;
      if (!host || !info?.isDirectory()) {
        return connectError(res, 404, 'not_found', `directory ${path} not found`);
      }
      const entries = await listDir(host, posix.resolve(HOME, path ?? ''), depth || 1);
      return json(res, 200, { entries });
    }
    if (url.pathname === '/process.Process/SendSignal') {
      const { process } = (await readJson(req)) as { process?: { pid?: number } };
      const child = sandbox.processes.get(process?.pid ?? -1);
      if (!child) return connectError(res, 404, 'not_found', 'process not found');
      killTree(child);
      return json(res, 200, {});
    }
    if (url.pathname === '/process.Process/Start') {
      return startProcess(sandbox, req, res, nextPid++);
    }
    return connectError(res, 404, 'unimplemented', `${url.pathname} is not in this fake`);
  };

  /** `process.Process/Start`: the process's events as Connect envelopes, then end-of-stream. */
  const startProcess = async (
    sandbox: Live,
    req: IncomingMessage,
    res: ServerResponse,
    pid: number,
  ) => {
    const request = JSON.parse(unenvelope(await readAll(req)).toString('utf8')) as {
      process: { cmd: string; args?: string[]; envs?: Record<string, string>; cwd?: string };
    };
    const cwd = posix.resolve(HOME, request.process.cwd ?? HOME);
    const argv = [request.process.cmd, ...(request.process.args ?? [])];
    const child = spawn(
      'bwrap',
      [...bwrapArgs(sandbox, cwd, request.process.envs ?? {}), ...argv],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    child.on('error', () => undefined);
    sandbox.processes.set(pid, child);
    res.writeHead(200, { 'content-type': 'application/connect+json' });
    const send = (message: unknown, end = false) =>
      res.write(envelope(Buffer.from(JSON.stringify(message)), end));
    send({ event: { start: { pid } } });
    child.stdout!.on('data', (data: Buffer) =>
      send({ event: { data: { stdout: data.toString('base64') } } }),
    );
    child.stderr!.on('data', (data: Buffer) =>
      send({ event: { data: { stderr: data.toString('base64') } } }),
    );
    const deadline = Number(req.headers['connect-timeout-ms'] ?? 0);
    const timer = deadline > 0 ? setTimeout(() => killTree(child), deadline) : undefined;
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      sandbox.processes.delete(pid);
      const exitCode = code ?? -1;
      send({
        event: {
          end: {
            exitCode,
            exited: code !== null,
            status: signal
              ? `signal: ${signal === 'SIGKILL' ? 'killed' : signal}`
              : `exit status ${exitCode}`,
          },
        },
      });
      send({}, true);
      res.end();
    });
  };

  const bwrapArgs = (sandbox: Live, cwd: string, envs: Record<string, string>): string[] => {
    const args = ['--die-with-parent', '--unshare-pid', '--unshare-ipc', '--unshare-uts'];
    for (const dir of ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc']) {
      args.push('--ro-bind-try', dir, dir);
    }
    args.push('--dev', '/dev', '--proc', '/proc');
    args.push('--bind', sandbox.home, HOME, '--bind', sandbox.tmp, '/tmp');
    args.push('--clearenv', '--setenv', 'HOME', HOME, '--setenv', 'USER', 'user');
    args.push('--setenv', 'PATH', '/usr/local/bin:/usr/bin:/bin');
    args.push('--setenv', 'MPLBACKEND', 'Agg');
    for (const [key, value] of Object.entries(envs)) args.push('--setenv', key, value);
    args.push('--chdir', cwd, '--');
    return args;
  };

  await Promise.all([listen(api), listen(envd)]);
  const fake: FakeE2B = {
    apiUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
    sandboxUrl: `http://127.0.0.1:${(envd.address() as AddressInfo).port}`,
    apiKey,
    sandboxes,
    requests,
    pageSize: 100,
    failing,
    holdCreates: false,
    releaseCreates() {
      const held = heldCreates;
      heldCreates = [];
      for (const release of held) release();
    },
    running: (id) => sandboxes.get(id)?.processes.size ?? 0,
    async close() {
      fake.releaseCreates();
      for (const sandbox of sandboxes.values()) stopProcesses(sandbox, 'paused');
      api.closeAllConnections();
      envd.closeAllConnections();
      await Promise.all([close(api), close(envd)]);
      await rm(base, { recursive: true, force: true });
    },
  };
  return fake;
}

/** The host path behind a sandbox path (relative: under its home), if it is in home or /tmp. */
function hostPath(sandbox: FakeE2BSandbox, path: string): string | undefined {
  const inside = posix.resolve(HOME, path);
  if (inside === HOME || inside.startsWith(`${HOME}/`)) {
    return join(sandbox.home, inside.slice(HOME.length));
  }
  if (inside === '/tmp' || inside.startsWith('/tmp/')) return join(sandbox.tmp, inside.slice(4));
  return undefined;
}

async function listDir(host: string, inside: string, depth: number): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const name of (await readdir(host)).sort()) {
    const info = await lstat(join(host, name));
    const path = posix.join(inside, name);
    const type = info.isSymbolicLink()
      ? 'FILE_TYPE_SYMLINK'
      : info.isDirectory()
        ? 'FILE_TYPE_DIRECTORY'
        : 'FILE_TYPE_FILE';
    out.push({
      name,
      type,
      path,
      size: String(info.size),
      mode: info.mode & 0o777,
      permissions: '-rw-r--r--',
      owner: 'user',
      group: 'user',
      modifiedTime: info.mtime.toISOString(),
    });
    if (type === 'FILE_TYPE_DIRECTORY' && depth > 1) {
      out.push(...(await listDir(join(host, name), path, depth - 1)));
    }
  }
  return out;
}

function created(sandbox: FakeE2BSandbox) {
  return {
    sandboxID: sandbox.id,
    templateID: sandbox.templateID,
    clientID: 'fake',
    envdVersion: ENVD_VERSION,
    envdAccessToken: sandbox.envdAccessToken,
    domain: null,
  };
}

/** A Connect envelope: flags (0x02 = end of stream), big-endian length, the message. */
function envelope(data: Buffer, end: boolean): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(end ? 2 : 0, 0);
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
}

function unenvelope(data: Buffer): Buffer {
  return data.subarray(5, 5 + data.readUInt32BE(1));
}

function killTree(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const text = (await readAll(req)).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.values(value).every((v) => typeof v === 'string')
  );
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
}

function fail(res: ServerResponse, status: number, message: string): void {
  json(res, status, { code: status, message });
}

/** A unary Connect error: its HTTP status and `{ code, message }`. */
function connectError(res: ServerResponse, status: number, code: string, message: string): void {
  json(res, status, { code, message });
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
