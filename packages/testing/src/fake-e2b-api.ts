import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { readJsonBody, sendJson } from './fake-http.js';
import {
  ENVD_VERSION,
  fail,
  type E2BWorld,
  type FakeE2BSandbox,
  type LiveSandbox,
} from './fake-e2b-world.js';

/**
 * E2B's control API: create, connect (resume), pause, kill and list sandboxes, `X-API-KEY`
 * checked, errors as `{ code, message }`.
 */
export function e2bControlApi(world: E2BWorld) {
  const { apiKey, base, sandboxes, requests, failing, current, kill, stopProcesses } = world;
  return async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    requests.push({ method: req.method ?? '', path: url.pathname });
    if (req.headers['x-api-key'] !== apiKey) return fail(res, 401, 'Invalid API key');
    const body = req.method === 'GET' || req.method === 'DELETE' ? {} : await readJsonBody(req);
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
      const sandbox: LiveSandbox = {
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
      if (world.settings().holdCreates) await world.held();
      if (res.destroyed) return;
      return sendJson(res, 201, created(sandbox));
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
      return sendJson(res, resumed ? 201 : 200, created(sandbox));
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
      const limit = Math.min(
        Number(url.searchParams.get('limit') ?? 100),
        world.settings().pageSize,
      );
      const from = Number(url.searchParams.get('nextToken') ?? 0);
      const all: LiveSandbox[] = [];
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
      return sendJson(
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

function isStringRecord(value: unknown): value is Record<string, string> {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.values(value).every((v) => typeof v === 'string')
  );
}
