import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeServer, killProcessGroup, readJsonBody, sendJson } from './fake-http.js';

/**
 * A fake Docker engine (`SANDBOX_LOCAL_RUNTIME=docker`; these machines have no Docker
 * engine) on a unix socket, speaking the Engine API as the daemon does: `POST /containers/create`
 * (`?name=`), `/containers/{id}/start` (204, 304 when running), `/containers/{id}/stop` (204,
 * 304), `GET /containers/{id}/json`, `DELETE /containers/{id}`, `GET /containers/json` with
 * `all` and `filters` (labels), `POST /containers/{id}/exec` (201, 409 when not running),
 * `POST /exec/{id}/start` answering the multiplexed stream (8-byte frame headers) until the
 * process ends, `GET /exec/{id}/json`; errors as `{ message }`.
 *
 * Behind it a container is its create request: an exec runs in bubblewrap with the container's
 * binds (`HostConfig.Mounts` of type `bind`, or `Binds`) as they were mounted at its start (each
 * source opened then, following links as the daemon's mount does, and held: a later change of
 * the path does not move it). A `Mounts` bind whose source is missing is refused at create and
 * at start with the daemon's message; a missing `Binds` source is created, as the daemon does. the host's system read-only (the image is not pulled), `WorkingDir`, `Env` and a
 * shared PID view, so one exec can signal another's processes as in a container. Limits are
 * recorded (`containers`), not enforced: enforcing them is Docker's job.
 */
export interface FakeDocker {
  /** `DOCKER_HOST`. */
  readonly host: string;
  readonly containers: ReadonlyMap<string, FakeContainer>;
  /** Exec processes running now, per container name. */
  running(name: string): number;
  close(): Promise<void>;
}

export interface FakeContainer {
  readonly id: string;
  readonly name: string;
  /** The create request's body, as sent. */
  readonly config: {
    Image: string;
    Cmd?: string[];
    Labels?: Record<string, string>;
    NetworkDisabled?: boolean;
    HostConfig: Record<string, unknown> & {
      Binds?: string[];
      Mounts?: Array<{ Type: string; Source: string; Target: string; ReadOnly?: boolean }>;
    };
  };
  running: boolean;
  readonly created: number;
  /** Each bind's host directory as mounted at the last start (held open), by its path inside. */
  mounted: ReadonlyMap<string, FileHandle>;
}

export interface FakeDockerOptions {
  /**
   * Called on `start` after the engine got the request and before it mounts the binds: what a
   * race between a caller's check of a path and the engine's mount can do happens here.
   */
  readonly beforeMount?: (container: FakeContainer) => void | Promise<void>;
  /**
   * Commands an image lacks, by image name: an exec of one fails as the daemon's does (the
   * runtime's message on the stream, exit code 127).
   */
  readonly missingCommands?: Readonly<Record<string, readonly string[]>>;
  /** Called on `stop`: an answer returned here is sent instead (an engine refusing to stop). */
  readonly beforeStop?: (container: FakeContainer) => { status: number; message: string } | void;
}

interface Exec {
  readonly container: FakeContainer;
  readonly cmd: string[];
  readonly workingDir: string;
  readonly env: string[];
  exitCode: number | null;
  running: boolean;
}

/** A container's binds, from `HostConfig.Mounts` (type `bind`) and `Binds`, in that order. */
function bindsOf(
  container: FakeContainer,
): Array<{ host: string; inside: string; readOnly: boolean; mount: boolean }> {
  const { Mounts = [], Binds = [] } = container.config.HostConfig;
  return [
    ...Mounts.filter((m) => m.Type === 'bind').map((m) => ({
      host: m.Source,
      inside: m.Target,
      readOnly: m.ReadOnly === true,
      mount: true,
    })),
    ...Binds.map((bind) => {
      const [host, inside, mode] = bind.split(':') as [string, string, string | undefined];
      return { host, inside, readOnly: mode === 'ro', mount: false };
    }),
  ];
}

/** The daemon's refusal of a `Mounts` bind whose source does not exist, or undefined. */
function missingMountSource(container: FakeContainer): string | undefined {
  const missing = bindsOf(container).find((b) => b.mount && !existsSync(b.host));
  return (
    missing &&
    `invalid mount config for type "bind": bind source path does not exist: ${missing.host}`
  );
}

export async function startFakeDocker(options: FakeDockerOptions = {}): Promise<FakeDocker> {
  const dir = await mkdtemp(join(tmpdir(), 'fake-docker-'));
  const socket = join(dir, 'docker.sock');
  const containers = new Map<string, FakeContainer>();
  const execs = new Map<string, Exec>();
  const processes = new Map<string, Set<ChildProcess>>();

  const find = (ref: string) =>
    containers.get(ref) ?? [...containers.values()].find((c) => c.id === ref);
  const stopAll = (container: FakeContainer) => {
    for (const child of processes.get(container.name) ?? []) killProcessGroup(child);
    processes.delete(container.name);
    container.running = false;
    for (const handle of container.mounted.values()) void handle.close().catch(() => undefined);
    container.mounted = new Map();
  };

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { message: String(error) });
      else res.destroy();
    });
  });
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://docker');
    const path = url.pathname.replace(/^\/v\d+\.\d+/, '');
    const body = req.method === 'POST' ? await readJsonBody(req) : {};
    let m: RegExpMatchArray | null;
    if (req.method === 'GET' && path === '/_ping') return void res.end('OK');
    if (req.method === 'POST' && path === '/containers/create') {
      const name = url.searchParams.get('name') ?? randomBytes(6).toString('hex');
      if (containers.has(name)) {
        return sendJson(res, 409, {
          message: `Conflict. The container name "/${name}" is already in use`,
        });
      }
      const container: FakeContainer = {
        id: randomBytes(32).toString('hex'),
        name,
        config: body as unknown as FakeContainer['config'],
        running: false,
        created: Math.floor(Date.now() / 1000),
        mounted: new Map(),
      };
      const refused = missingMountSource(container);
      if (refused) return sendJson(res, 400, { message: refused });
      containers.set(name, container);
      return sendJson(res, 201, { Id: container.id, Warnings: [] });
    }
    if (req.method === 'GET' && path === '/containers/json') {
      const all = url.searchParams.get('all') === 'true' || url.searchParams.get('all') === '1';
      const filters = JSON.parse(url.searchParams.get('filters') ?? '{}') as {
        label?: string[];
      };
      const listed = [...containers.values()].filter((c) => {
        if (!all && !c.running) return false;
        return (filters.label ?? []).every((label) => {
          const [key, value] = label.split('=', 2) as [string, string | undefined];
          const has = c.config.Labels?.[key];
          return value === undefined ? has !== undefined : has === value;
        });
      });
      return sendJson(
        res,
        200,
        listed.map((c) => ({
          Id: c.id,
          Names: [`/${c.name}`],
          Image: c.config.Image,
          Labels: c.config.Labels ?? {},
          Created: c.created,
          State: c.running ? 'running' : 'exited',
        })),
      );
    }
    if ((m = path.match(/^\/containers\/([^/]+)(\/[a-z]+)?$/))) {
      const container = find(decodeURIComponent(m[1]!));
      if (!container) return sendJson(res, 404, { message: `No such container: ${m[1]}` });
      const action = m[2] ?? '';
      if (req.method === 'GET' && action === '/json') {
        return sendJson(res, 200, {
          Id: container.id,
          Name: `/${container.name}`,
          State: { Running: container.running, Status: container.running ? 'running' : 'exited' },
          Config: { Image: container.config.Image, Labels: container.config.Labels ?? {} },
          HostConfig: container.config.HostConfig,
        });
      }
      if (req.method === 'POST' && action === '/start') {
        if (container.running) return void res.writeHead(304).end();
        await options.beforeMount?.(container);
        const refused = missingMountSource(container);
        if (refused) return sendJson(res, 400, { message: refused });
        const mounted = new Map<string, FileHandle>();
        for (const { host, inside, mount } of bindsOf(container)) {
          if (!mount) await mkdir(host, { recursive: true });
          mounted.set(inside, await open(host, 'r'));
        }
        container.mounted = mounted;
        container.running = true;
        return void res.writeHead(204).end();
      }
      if (req.method === 'POST' && action === '/stop') {
        const refused = options.beforeStop?.(container);
        if (refused) return sendJson(res, refused.status, { message: refused.message });
        if (!container.running) return void res.writeHead(304).end();
        stopAll(container);
        return void res.writeHead(204).end();
      }
      if (req.method === 'DELETE' && action === '') {
        if (container.running && url.searchParams.get('force') !== 'true') {
          return sendJson(res, 409, { message: 'You cannot remove a running container' });
        }
        stopAll(container);
        containers.delete(container.name);
        return void res.writeHead(204).end();
      }
      if (req.method === 'POST' && action === '/exec') {
        if (!container.running) {
          return sendJson(res, 409, { message: `Container ${container.id} is not running` });
        }
        const id = randomBytes(32).toString('hex');
        execs.set(id, {
          container,
          cmd: (body.Cmd as string[]) ?? [],
          workingDir: (body.WorkingDir as string) || '/',
          env: (body.Env as string[]) ?? [],
          exitCode: null,
          running: false,
        });
        return sendJson(res, 201, { Id: id });
      }
    }
    if ((m = path.match(/^\/exec\/([^/]+)\/(start|json)$/))) {
      const exec = execs.get(m[1]!);
      if (!exec) return sendJson(res, 404, { message: `No such exec instance: ${m[1]}` });
      if (req.method === 'GET' && m[2] === 'json') {
        return sendJson(res, 200, { ID: m[1], Running: exec.running, ExitCode: exec.exitCode });
      }
      if (req.method === 'POST' && m[2] === 'start') {
        if (!exec.container.running) {
          return sendJson(res, 409, { message: `Container ${exec.container.id} is not running` });
        }
        return runExec(exec, res);
      }
    }
    return sendJson(res, 404, { message: `page not found: ${req.method} ${path}` });
  };

  const runExec = (exec: Exec, res: ServerResponse) => {
    const command = exec.cmd[0] ?? '';
    if (options.missingCommands?.[exec.container.config.Image]?.includes(command)) {
      const message =
        'OCI runtime exec failed: exec failed: unable to start container process: exec: ' +
        `"${command}": executable file not found in $PATH: unknown\r\n`;
      const data = Buffer.from(message);
      const head = Buffer.alloc(8);
      head.writeUInt8(1, 0);
      head.writeUInt32BE(data.length, 4);
      exec.exitCode = 127;
      res.writeHead(200, { 'content-type': 'application/vnd.docker.multiplexed-stream' });
      return void res.end(Buffer.concat([head, data]));
    }
    const args = ['--die-with-parent', '--unshare-ipc', '--unshare-uts'];
    for (const d of ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/etc']) {
      args.push('--ro-bind-try', d, d);
    }
    // The host's /proc: execs of one container see each other's processes (as in its PID
    // namespace), so a second exec can kill the first's process group.
    args.push('--dev', '/dev', '--ro-bind', '/proc', '/proc');
    for (const { host, inside, readOnly } of bindsOf(exec.container)) {
      // The directory held since the start, through this process's descriptor of it.
      const held = exec.container.mounted.get(inside);
      args.push(
        readOnly ? '--ro-bind' : '--bind',
        held ? `/proc/${process.pid}/fd/${held.fd}` : host,
        inside,
      );
    }
    args.push('--clearenv');
    for (const entry of exec.env) {
      const at = entry.indexOf('=');
      args.push('--setenv', entry.slice(0, at), entry.slice(at + 1));
    }
    args.push('--chdir', exec.workingDir, '--', ...exec.cmd);
    const child = spawn('bwrap', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    child.on('error', () => undefined);
    exec.running = true;
    const own = processes.get(exec.container.name) ?? new Set();
    own.add(child);
    processes.set(exec.container.name, own);
    res.writeHead(200, { 'content-type': 'application/vnd.docker.multiplexed-stream' });
    const frame = (stream: 1 | 2) => (data: Buffer) => {
      const head = Buffer.alloc(8);
      head.writeUInt8(stream, 0);
      head.writeUInt32BE(data.length, 4);
      res.write(Buffer.concat([head, data]));
    };
    child.stdout!.on('data', frame(1));
    child.stderr!.on('data', frame(2));
    child.on('close', (code, signal) => {
      own.delete(child);
      exec.running = false;
      exec.exitCode = code ?? 128 + (signal === 'SIGKILL' ? 9 : 15);
      res.end();
    });
  };

  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    host: `unix://${socket}`,
    containers,
    running: (name) => processes.get(name)?.size ?? 0,
    async close() {
      for (const container of containers.values()) stopAll(container);
      await closeServer(server);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
