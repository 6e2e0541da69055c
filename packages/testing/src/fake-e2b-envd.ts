import { lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { dirname, join, posix } from 'node:path';
import { killProcessGroup, readBody, readJsonBody, sendJson } from './fake-http.js';
import { startProcess } from './fake-e2b-process.js';
import { connectError, fail, HOME, type E2BWorld, type FakeE2BSandbox } from './fake-e2b-world.js';

/**
 * envd, the daemon in every sandbox (one origin for all of them, told apart by the
 * `E2b-Sandbox-Id` header as E2B's sandbox proxy does): `GET`/`POST /files`, the Connect RPCs
 * `process.Process/Start`, `process.Process/SendSignal` and `filesystem.Filesystem/ListDir`, the
 * `X-Access-Token` checked, 502 for a sandbox that is not running.
 */
export function e2bEnvd(world: E2BWorld) {
  const { requests, current } = world;
  return async (req: IncomingMessage, res: ServerResponse) => {
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
      await world.settings().beforeFileRead?.(host);
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
        const form = await new Response(await readBody(req), {
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
        files.push({ path: queryPath ?? '', data: await readBody(req) });
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
      return sendJson(res, 200, written);
    }
    if (req.method !== 'POST') return fail(res, 404, 'not found');
    if (url.pathname === '/filesystem.Filesystem/ListDir') {
      const { path, depth } = (await readJsonBody(req)) as { path?: string; depth?: number };
      const host = toHost(path ?? '');
      const info = host ? await lstat(host).catch(() => undefined) : undefined;
      if (!host || !info?.isDirectory()) {
        return connectError(res, 404, 'not_found', `directory ${path} not found`);
      }
      const entries = await listDir(host, posix.resolve(HOME, path ?? ''), depth || 1);
      return sendJson(res, 200, { entries });
    }
    if (url.pathname === '/process.Process/SendSignal') {
      const { process } = (await readJsonBody(req)) as { process?: { pid?: number } };
      const child = sandbox.processes.get(process?.pid ?? -1);
      if (!child) return connectError(res, 404, 'not_found', 'process not found');
      killProcessGroup(child);
      return sendJson(res, 200, {});
    }
    if (url.pathname === '/process.Process/Start') {
      return startProcess(sandbox, req, res, world.nextPid());
    }
    return connectError(res, 404, 'unimplemented', `${url.pathname} is not in this fake`);
  };
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
