/**
 * Fuzzing the boundaries with fast-check. Bodies derived from the protocol's zod
 * schemas (tests/fuzz-arbitraries.ts), valid and spoiled, go to every HTTP route of the api
 * (the routes it registers with their documentation, which the OpenAPI document is built from)
 * and frames go to the three
 * WebSocket endpoints, against a running all-in-one. Nothing may answer 5xx (apart from the
 * documented ones of a route), crash, or log an unhandled error; every error answer has its
 * documented shape and status; every frame the server sends is a valid server message; every
 * close code is a documented one. Counts: FUZZ_HTTP, FUZZ_WS (10,000 each), FUZZ_SEED.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type z } from 'zod';
import { mountApi } from '@agent-backend/api';
import { commonErrors } from '@agent-backend/api-docs';
import { ERROR_STATUS, type DocumentedRoute as RouteDoc } from '@agent-backend/http-server';
import { registeredRoutes } from '@agent-backend/runtime';
import { NodeClient } from '@agent-backend/node-client';
import {
  ErrorBody,
  JsonRpcResponse,
  NodeClientMessage,
  ServerMessage,
  ToolCallRequest,
  WebClientMessage,
  WS_CLOSE,
} from '@agent-backend/protocol';
import { REPO_ROOT, startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { accessToken } from './agent-helpers.js';
import { bodyText, LOOPBACK_URL } from './fuzz-arbitraries.js';
import { keyFiles, requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const HTTP_COUNT = Number(process.env.FUZZ_HTTP ?? 10_000);
const WS_COUNT = Number(process.env.FUZZ_WS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
const SECRET = 'fuzz-secret';
const CONCURRENCY = 12;
const USER = 'fuzzy';

type Tally = Record<string, number>;
const bump = (tally: Tally, key: string) => (tally[key] = (tally[key] ?? 0) + 1);

describe('fuzzing the HTTP API and the WebSocket endpoints', () => {
  const keys = keyFiles();
  let service: ServiceProcess;
  let token: string;
  const report: Record<string, unknown> = { seed: SEED };

  beforeAll(async () => {
    requireBuild(MAIN);
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('fuzz'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        INTERNAL_API_SECRET: SECRET,
        DEV_TOKENS: 'true',
        LOG_LEVEL: 'info',
      },
    });
    token = await accessToken(keys.privateKey, USER);
  });
  afterAll(async () => {
    await service?.stop('SIGTERM');
    mkdirSync(join(REPO_ROOT, 'artifacts'), { recursive: true });
    writeFileSync(join(REPO_ROOT, 'artifacts/fuzz.json'), `${JSON.stringify(report, null, 2)}\n`);
  });

  it(`answers ${HTTP_COUNT} fuzzed requests over every route with documented answers only`, async () => {
    const routes = await registeredRoutes(async (context) => [await mountApi(context)]);
    const requests = fc
      .sample(requestArbitrary(routes), { numRuns: HTTP_COUNT, seed: SEED })
      .map((request, i) => ({ ...request, i }));
    const statuses: Tally = {};
    const mutations: Tally = {};
    const problems: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < requests.length) {
        const request = requests[next++]!;
        bump(mutations, request.mutation);
        const problem = await send(request);
        if (problem) problems.push(problem);
      }
    };

    async function send(request: FuzzRequest & { i: number }): Promise<string | undefined> {
      const { route } = request;
      const headers: Record<string, string> = { ...request.headers };
      if (request.auth === 'valid') headers.authorization = `Bearer ${token}`;
      if (request.auth === 'garbage') headers.authorization = 'Bearer not.a.token';
      if (route.auth === 'internal' && request.auth === 'valid')
        headers['x-internal-secret'] = SECRET;
      let response: Response;
      try {
        response = await fetch(`${service.url}${request.path}`, {
          method: route.method,
          headers,
          ...(request.body !== undefined ? { body: request.body } : {}),
          redirect: 'manual',
          signal: AbortSignal.timeout(30_000),
        });
      } catch (error) {
        return `#${request.i} ${route.method} ${request.path}: no answer (${String(error)})`;
      }
      bump(statuses, String(response.status));
      const where = `#${request.i} ${route.method} ${route.path} (${request.mutation}) → ${response.status}`;
      if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        await response.body?.cancel();
        return response.status === 200 ? undefined : `${where}: a stream with a non-200 status`;
      }
      const text = await response.text();
      return checkAnswer(route, response.status, text, where);
    }

    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    report.http = { requests: requests.length, statuses, mutations, problems: problems.length };
    expect(problems.slice(0, 20)).toEqual([]);
    expect(statuses['500'] ?? 0).toBe(0);
    expect(await alive(service)).toBe(true);
  }, 600_000);

  it(`survives ${WS_COUNT} fuzzed frames over the three endpoints`, async () => {
    // A user of its own: the HTTP phase may have signed the first one out everywhere
    // (`DELETE /api/auth/sessions`), which refuses its tokens on every endpoint.
    const wsUser = `${USER}-ws`;
    const wsToken = await accessToken(keys.privateKey, wsUser);
    const endpoints = [
      {
        name: 'desktop',
        path: `/ws/desktop?client_id=desktop_${wsUser}`,
        schemas: [NodeClientMessage, JsonRpcResponse],
      },
      {
        name: 'extension',
        path: `/ws/extension?client_id=user_${wsUser}`,
        schemas: [NodeClientMessage, JsonRpcResponse],
      },
      { name: 'web', path: `/ws/web?user_id=${wsUser}`, schemas: [WebClientMessage] },
    ] as const;
    const closes: Tally = {};
    const received: Tally = {};
    const problems: string[] = [];
    const documentedCloses = new Set<number>([1000, ...Object.values(WS_CLOSE)]);
    const perEndpoint = Math.ceil(WS_COUNT / endpoints.length);
    let sent = 0;

    for (const [e, endpoint] of endpoints.entries()) {
      const frames = fc.sample(frameArbitrary(endpoint.schemas), {
        numRuns: perEndpoint,
        seed: SEED + e,
      });
      let socket: WebSocket | undefined;
      const open = () =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(
            `${service.url.replace('http', 'ws')}${endpoint.path}&token=${wsToken}`,
          );
          ws.on('message', (data) => {
            let frame: unknown;
            try {
              frame = JSON.parse(String(data));
            } catch {
              problems.push(
                `${endpoint.name}: a frame that is not JSON: ${String(data).slice(0, 80)}`,
              );
              return;
            }
            const parsed = ServerMessage.safeParse(frame);
            const rpc = ToolCallRequest.safeParse(frame);
            if (!parsed.success && !rpc.success) {
              problems.push(
                `${endpoint.name}: an undocumented frame ${JSON.stringify(frame).slice(0, 120)}`,
              );
            } else bump(received, parsed.success ? parsed.data.type : 'tools/call');
          });
          ws.on('close', (code) => {
            bump(closes, `${endpoint.name} ${code}`);
            if (!documentedCloses.has(code)) problems.push(`${endpoint.name}: close code ${code}`);
          });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        });
      for (const frame of frames) {
        if (!socket || socket.readyState !== WebSocket.OPEN) {
          if (socket && socket.readyState !== WebSocket.CLOSED) {
            await new Promise((resolve) => socket!.once('close', resolve));
          }
          socket = await open();
        }
        if (frame.binary) socket.send(Buffer.from(frame.text), { binary: true });
        else socket.send(frame.text);
        sent += 1;
        // Let the server keep up (and answer) now and then, as a real client would.
        if (sent % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      if (socket && socket.readyState === WebSocket.OPEN) {
        const closed = new Promise((resolve) => socket!.once('close', resolve));
        socket.close(1000);
        await closed;
      }
    }
    report.ws = { frames: sent, received, closes, problems: problems.length };
    expect(problems.slice(0, 20)).toEqual([]);
    expect(await alive(service)).toBe(true);

    // The gateway still does its job: a fresh node answers a tool call made over HTTP.
    const node = new NodeClient({
      url: service.url,
      kind: 'desktop',
      userId: 'after-fuzz',
      token: await accessToken(keys.privateKey, 'after-fuzz'),
      tools: { ping: { description: 'pong', handler: () => 'pong' } },
    });
    await node.start();
    try {
      const call = await fetch(`${service.url}/node/tools/call`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${await accessToken(keys.privateKey, 'after-fuzz')}`,
        },
        body: JSON.stringify({ node_type: 'desktop', tool_name: 'ping' }),
      });
      expect(await call.json()).toMatchObject({ success: true, text: 'pong' });
    } finally {
      await node.close();
    }
    const unhandled = [...service.stdout, ...service.stderr].filter((line) =>
      /unhandled (rejection|error)|uncaught/i.test(line),
    );
    expect(unhandled).toEqual([]);
  }, 600_000);
});

interface FuzzRequest {
  route: RouteDoc;
  path: string;
  body?: string;
  headers: Record<string, string>;
  auth: 'valid' | 'none' | 'garbage';
  mutation: string;
}

const PATH_VALUES = fc.oneof(
  fc.constantFrom('x', 'kb_123', '00000000-0000-0000-0000-000000000000', 'run-1:3', 'lark'),
  fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' }).map(encodeURIComponent),
  fc.constantFrom('%E0%A4%A', '%00', '..%2F..%2Fetc', '%2e%2e', 'a'.repeat(3000)),
);

function requestArbitrary(routes: readonly RouteDoc[]): fc.Arbitrary<FuzzRequest> {
  return fc.constantFrom(...routes).chain((route) => {
    const schema =
      route.body ?? (route.rawBody && !Array.isArray(route.rawBody) ? route.rawBody : undefined);
    const hasBody = route.method !== 'GET' && route.method !== 'DELETE';
    const body = hasBody
      ? schema
        ? bodyText(schema as z.ZodType)
        : fc
            .jsonValue({ maxDepth: 2 })
            .map((v) => ({ mutation: 'no-schema', text: JSON.stringify(v) }))
      : fc.constant({ mutation: 'no-body', text: undefined as string | undefined });
    const names = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
    return fc
      .record({
        body,
        params: fc.tuple(...names.map(() => PATH_VALUES)),
        query: fc.option(
          fc.dictionary(
            fc.constantFrom(
              'q',
              'limit',
              'cursor',
              'user_id',
              'node_type',
              'online_only',
              'last_event_id',
              'token',
            ),
            fc.string({ maxLength: 20 }),
            { maxKeys: 3 },
          ),
          { freq: 3 },
        ),
        auth: fc.constantFrom('valid', 'valid', 'valid', 'valid', 'none', 'garbage'),
        contentType: fc.constantFrom(
          'application/json',
          'application/json',
          'application/json',
          'text/plain',
          'application/json; charset=latin1',
          '',
        ),
      })
      .map(({ body, params, query, auth, contentType }) => {
        let path = route.path;
        names.forEach((name, i) => (path = path.replace(`:${name}`, params[i]!)));
        if (query) path += `?${new URLSearchParams(query)}`;
        const headers: Record<string, string> = {};
        if (body.text !== undefined && contentType) headers['content-type'] = contentType;
        return {
          route,
          path,
          ...(body.text !== undefined ? { body: body.text } : {}),
          headers,
          auth: auth as FuzzRequest['auth'],
          mutation: body.mutation,
        };
      });
  });
}

/** `undefined` when the answer is one the route documents; else what is wrong with it. */
function checkAnswer(
  route: RouteDoc,
  status: number,
  text: string,
  where: string,
): string | undefined {
  const documented = route.responses[status];
  if (documented?.html || documented?.text || (status >= 300 && status < 400)) return undefined;
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    return `${where}: not JSON: ${text.slice(0, 100)}`;
  }
  if (status === 204) return undefined;
  if (documented?.anyJson) return undefined;
  if (documented?.json) {
    const schemas = Array.isArray(documented.json) ? documented.json : [documented.json];
    if (schemas.some((s: z.ZodType) => s.safeParse(body).success)) return undefined;
    // A route's own error shape for a status does not replace the service-wide one for it.
    if (status < 400) return `${where}: the body does not match its schema: ${text.slice(0, 200)}`;
  }
  if (status < 400) return `${where}: an undocumented success`;
  const parsed = ErrorBody.safeParse(body);
  if (!parsed.success) return `${where}: not the error shape: ${text.slice(0, 200)}`;
  const code = parsed.data.error.code as keyof typeof ERROR_STATUS;
  if (ERROR_STATUS[code] !== status) return `${where}: code ${code} with status ${status}`;
  const allowed = new Set<string>([...commonErrors(route), ...(route.errors ?? []), 'not_found']);
  allowed.delete('internal_error');
  if (status >= 500 && !allowed.has(code)) return `${where}: ${code}`;
  if (!allowed.has(code))
    return `${where}: undocumented code ${code}: ${parsed.data.error.message}`;
  return undefined;
}

function frameArbitrary(
  schemas: readonly z.ZodType[],
): fc.Arbitrary<{ text: string; binary?: boolean }> {
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc.oneof(...schemas.map((s) => bodyText(s))).map(({ text }) => ({ text })),
    },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.string({ maxLength: 200, unit: 'binary' }).map((text) => ({ text })),
        fc.constantFrom(
          { text: '{"type":"heartbeat"}', binary: true },
          { text: 'x'.repeat(2 * 1024 * 1024) },
          { text: '{"jsonrpc":"2.0","id":"nope","result":{}}' },
          {
            text: `{"type":"register","available_tools":["${'t'.repeat(100)}"],"url":"${LOOPBACK_URL}"}`,
          },
        ),
      ),
    },
  );
}

async function alive(service: ServiceProcess): Promise<boolean> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return false;
  const response = await fetch(`${service.url}/healthz`);
  return response.ok;
}
