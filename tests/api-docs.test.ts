/**
 * The API documents describe the service as it runs. Each role is started
 * in-process on real Redis and PostgreSQL, as its `main.ts` composes it, and the routes and
 * mounts its HTTP server registered are compared with the OpenAPI document both ways, with how
 * each is authenticated (the kind of the hook that runs) and the body, path and query schemas
 * each route validates with. The api role serves both documents and the page that shows them,
 * without authentication and without loading anything from outside the service.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import type { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mountApi, MCP_FAILURE_STATUS } from '@agent-backend/api';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  NAMED_SCHEMAS,
} from '@agent-backend/api-docs';
import type { DocumentedRoute, HttpServer, RouteAuth } from '@agent-backend/http-server';
import { mountGateway } from '@agent-backend/gateway';
import { startService, type RunningService } from '@agent-backend/runtime';
import {
  createTestSchema,
  REPO_ROOT,
  testDatabaseUrl,
  testRedisUrl,
  uniquePrefix,
  type TestSchema,
} from '@agent-backend/testing';
import { mountWorker } from '@agent-backend/worker';
import { keyFiles, tempDir } from './helpers.js';

type Role = 'api' | 'gateway' | 'worker' | 'all-in-one';
type Json = Record<string, unknown>;

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const MOUNTS: Record<Role, Parameters<typeof startService>[1]> = {
  api: { migrate: true, mount: async (context) => [await mountApi(context)] },
  gateway: {
    migrate: false,
    databaseReadiness: false,
    mount: async (context) => [await mountGateway(context)],
  },
  worker: { migrate: true, mount: async (context) => [await mountWorker(context)] },
  'all-in-one': {
    migrate: true,
    mount: async (context) => [
      await mountApi(context),
      await mountGateway(context),
      await mountWorker(context),
    ],
  },
};

const key = (route: { method: string; path: string }) => `${route.method} ${route.path}`;
const mountKey = (mount: { prefix: string }) => key({ method: 'GET', path: mount.prefix });
/** What a role serves: its routes and mounts. */
const served = (app: HttpServer) => [...app.routes().map(key), ...app.mounts().map(mountKey)];

/**
 * The hook a documented route runs: its documented credential, except `webhook`, which has none
 * (the chat platform's signature and token are checked by the handler, on the raw body).
 */
const runningAuth = (doc: DocumentedRoute): RouteAuth =>
  doc.auth === 'webhook' ? 'none' : doc.auth;

/**
 * The OpenAPI document is generated from the routes and mounts the api role registers, each
 * documented in its registration: it lists exactly those (routes a configuration turns off
 * included), and every route of every role is documented with the credential its hook checks
 * and the schemas it validates with.
 */
describe('API documents of the running roles', () => {
  const services = new Map<Role, RunningService>();
  let schema: TestSchema;
  let apiUrl: string;

  beforeAll(async () => {
    schema = await createTestSchema('apidocs');
    const keys = keyFiles();
    Object.assign(process.env, {
      REDIS_URL: testRedisUrl(),
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
      REDIS_KEY_PREFIX: uniquePrefix('apidocs'),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATA_DIR: tempDir('apidocs'),
      JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
      JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
      // Registers the conditional routes (the dev token route, the login layer's token routes,
      // the queue dashboard on BullMQ), so every documented route is there to compare.
      DEV_TOKENS: 'true',
      ADMIN_TOKEN: 'apidocs-admin-token',
      AUTH_SERVICE_TOKEN: 'apidocs-service-token',
      // `/metrics` then runs its operator-credential hook, which the document shows.
      METRICS_TOKEN: 'apidocs-metrics-token',
    });
    // One after the other: each reads its configuration from the environment when it starts.
    for (const role of Object.keys(MOUNTS) as Role[]) {
      process.env.INSTANCE_ID = `apidocs-${role}`;
      services.set(role, await startService(role, MOUNTS[role]));
    }
    const address = services.get('api')!.app.server.address() as AddressInfo;
    apiUrl = `http://127.0.0.1:${address.port}`;
  });
  afterAll(async () => {
    // The service's shutdown ends with process.exit, which here would end the test worker.
    vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    for (const service of services.values()) await service.shutdown();
    await schema?.drop();
  });

  it('the OpenAPI document is generated from exactly the routes the api role registers', () => {
    const api = services.get('api')!.app;
    const documented = api.documented();
    const document = buildOpenApiDocument(documented);
    const listed = Object.entries(document.paths as Record<string, Json>)
      .flatMap(([path, item]) =>
        Object.keys(item).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`),
      )
      .sort();
    expect(listed).toEqual(documented.map(key).sort());
    // Every route and mount the role serves is documented, and only these are, besides the ones
    // a configuration turns off (none in this test's configuration).
    expect(
      documented
        .filter((route) => route.enabled)
        .map(key)
        .sort(),
    ).toEqual(served(api).sort());
    expect(documented.filter((route) => !route.enabled)).toEqual([]);
    // The all-in-one serves the same document (its gateway and worker add no route of their own).
    expect(buildOpenApiDocument(services.get('all-in-one')!.app.documented())).toEqual(document);
    // The checked-in document is the one generated from them.
    expect(document).toEqual(
      JSON.parse(readFileSync(join(REPO_ROOT, 'docs/openapi.json'), 'utf8')),
    );
  });

  it.each(Object.keys(MOUNTS) as Role[])(
    'each route of the %s role is documented with the credential and schemas it uses',
    (role) => {
      const app = services.get(role)!.app;
      const byKey = new Map(app.documented().map((route) => [key(route), route]));
      // Every role's routes are in the api's document (the gateway and worker serve only the
      // health and metrics routes of every role).
      const inDocument = new Set(services.get('api')!.app.documented().map(key));
      // Soft: one run lists every route that drifted.
      for (const route of app.routes()) {
        const doc = byKey.get(key(route));
        expect(doc, key(route)).toBeDefined();
        expect.soft(inDocument.has(key(route)), `${key(route)} in the document`).toBe(true);
        expect.soft(route.auth, `${key(route)} auth`).toBe(runningAuth(doc!));
        expect.soft(doc!.body, `${key(route)} body`).toBe(route.body);
        expect.soft(route.rawBody, `${key(route)} raw body`).toBe(doc!.rawBody !== undefined);
        expect.soft(doc!.params, `${key(route)} path parameters`).toBe(route.params);
        expect.soft(doc!.query, `${key(route)} query`).toBe(route.query);
        // Every path parameter is documented, and every documented one is in the path.
        const inPath = [...route.path.matchAll(/:(\w+)/g)].map(([, name]) => name!).sort();
        const shape = (doc!.params as { shape?: Record<string, unknown> } | undefined)?.shape;
        const listed = [
          ...Object.keys(shape ?? {}),
          ...(doc!.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
        ].sort();
        expect.soft(listed, `${key(route)} path parameters documented`).toEqual(inPath);
      }
      for (const mount of app.mounts()) {
        const doc = byKey.get(mountKey(mount));
        expect(doc?.mount, mountKey(mount)).toBe(true);
        expect.soft(mount.auth, `${mountKey(mount)} auth`).toBe(runningAuth(doc!));
      }
    },
  );

  it('describes bodies and answers with the protocol schemas themselves', () => {
    const named = (schema: z.ZodType | readonly z.ZodType[] | undefined) =>
      (Array.isArray(schema) ? schema : schema ? [schema] : []).every((s) => NAMED_SCHEMAS.has(s));
    for (const route of services.get('api')!.app.documented()) {
      const where = key(route);
      expect(named(route.body), where).toBe(true);
      expect(named(route.rawBody), where).toBe(true);
      for (const answer of Object.values(route.responses)) {
        expect(named(answer.json) && named(answer.events), where).toBe(true);
      }
      expect(!route.query || NAMED_SCHEMAS.has(route.query), where).toBe(true);
      expect(!route.params || NAMED_SCHEMAS.has(route.params), where).toBe(true);
    }
  });

  it('the comparisons cover query and path schemas and the dashboard behind ADMIN_TOKEN', () => {
    // Registered in this test's setup (DEV_TOKENS, ADMIN_TOKEN, AUTH_SERVICE_TOKEN, BullMQ), so
    // none is vacuous.
    const app = services.get('all-in-one')!.app;
    const withSchema = (part: 'query' | 'params') =>
      app
        .routes()
        .filter((route) => route[part] !== undefined)
        .map(key);
    expect(withSchema('query')).toEqual(
      expect.arrayContaining(['GET /api/memories', 'GET /node/devices']),
    );
    expect(withSchema('params')).toEqual(
      expect.arrayContaining([
        'GET /api/agent/sessions/:session_id/stream',
        'POST /api/agent/approvals/:request_id/decision',
        'POST /api/agent/runs/:run_id/decisions',
      ]),
    );
    expect(app.mounts()).toContainEqual({ prefix: '/admin/queues', auth: 'admin' });
  });

  it('serves the OpenAPI document of exactly the registered routes, without authentication', async () => {
    const res = await fetch(`${apiUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const document = (await res.json()) as { paths: Record<string, Json> };
    expect(document).toEqual(buildOpenApiDocument(services.get('api')!.app.documented()));
    expect(document).toEqual(
      JSON.parse(readFileSync(join(REPO_ROOT, 'docs/openapi.json'), 'utf8')),
    );
    const served = Object.entries(document.paths)
      .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    const api = services.get('api')!.app;
    const registered = [
      ...api.routes().map((route) => `${route.method} ${route.path.replace(/:(\w+)/g, '{$1}')}`),
      ...api.mounts().map((mount) => `GET ${mount.prefix}`),
    ].sort();
    expect(served).toEqual(registered);

    // Every status MCP validation answers a failure with is documented.
    const validate = document.paths['/api/tools/mcp/validate']!.post as { responses: Json };
    for (const status of new Set(Object.values(MCP_FAILURE_STATUS))) {
      expect(Object.keys(validate.responses), `MCP validation ${status}`).toContain(String(status));
    }
  });

  it('serves the AsyncAPI document', async () => {
    const res = await fetch(`${apiUrl}/asyncapi.json`);
    expect(res.status).toBe(200);
    const document = await res.json();
    expect(document).toEqual(buildAsyncApiDocument());
    expect(document).toEqual(
      JSON.parse(readFileSync(join(REPO_ROOT, 'docs/asyncapi.json'), 'utf8')),
    );
  });

  it('serves a page that renders both documents with nothing from elsewhere', async () => {
    const res = await fetch(`${apiUrl}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toContain('<main id="app">');
    // A policy that allows its own inline script and style by hash, and no framing.
    const policy = res.headers.get('content-security-policy') ?? '';
    expect(policy).toMatch(/(^|; )script-src 'sha256-[^' ]+'(;|$)/);
    expect(policy).toMatch(/(^|; )style-src 'sha256-[^' ]+'(;|$)/);
    expect(policy).toContain("default-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain('unsafe-inline');
    expect(res.headers.get('x-frame-options')).toBe('DENY');

    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
    }
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (request) => requested.push(request.url()));
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(error.message));
      // What the page's Content-Security-Policy refused, as Chromium reports it.
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) errors.push(message.text());
      });
      await page.goto(`${apiUrl}/docs`);
      await page.waitForSelector('body[data-ready="true"]', { timeout: 15_000 });
      expect(requested.sort()).toEqual(
        [`${apiUrl}/asyncapi.json`, `${apiUrl}/docs`, `${apiUrl}/openapi.json`].sort(),
      );
      // One expandable entry per HTTP operation, and the WebSocket frames after them.
      const operations = await page.locator('#http details.op').count();
      expect(operations).toBe(services.get('api')!.app.documented().length);
      expect(await page.locator('#ws details.op').count()).toBeGreaterThan(20);
      // A schema expands when opened: the invoke body's fields appear.
      const invoke = page.locator('details.op', { hasText: '/api/agent/invoke' }).first();
      await invoke.locator('summary').first().click();
      await invoke
        .locator('details.ref > summary', { hasText: 'InvokeRequestInput' })
        .first()
        .click();
      await expect.poll(() => invoke.textContent()).toContain('llm_config');
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
