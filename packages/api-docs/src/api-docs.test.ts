import { createRequire } from 'node:module';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  AgentEvent,
  AuthErrorBody,
  EncryptedBody,
  HealthResponse,
  InvokeRequest,
  ListMemoriesQuery,
  MemoryList,
  RefreshRequest,
  RefreshResponse,
  ResumeStreamParams,
  UrlVerificationBody,
  WebhookAck,
  JsonRpcError,
  JsonRpcSuccess,
  NodeClientMessage,
  ServerMessage,
  ToolCallRequest,
  WebClientMessage,
  WS_PATHS,
} from '@agent-backend/protocol';
import type { DocumentedRoute } from '@agent-backend/http-server';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  NAMED_SCHEMAS,
  renderDocsPage,
  SERVER_MESSAGE_CHANNELS,
} from './index.js';

const require = createRequire(import.meta.url);
type Json = Record<string, unknown>;

/** ajv with the official AsyncAPI 3.0.0 JSON schema (from @asyncapi/specs). */
function asyncApiValidator() {
  const specs = require('@asyncapi/specs') as { schemas: Record<string, object> };
  // The AsyncAPI schema embeds its own copy of the draft-07 meta-schema; ajv's would clash.
  const ajv = new Ajv({ strict: false, allErrors: true, meta: false, validateSchema: false });
  // ajv-formats is CommonJS: its default export is the plugin, or a module holding it.
  type Plugin = (ajv: Ajv) => Ajv;
  const plugin = formats as unknown as Plugin & { default?: Plugin };
  (plugin.default ?? plugin)(ajv);
  return ajv.compile(specs.schemas['3.0.0']!);
}

/**
 * Documented routes of the kinds the service has, as `HttpServer.documented()` lists them: a body,
 * path and query schemas, a header parameter, the webhook's raw body, an SSE answer, a mount that
 * is documented but not served, and an own answer merged with the error answers of its status.
 */
const ROUTES: DocumentedRoute[] = [
  {
    method: 'POST',
    path: '/api/agent/invoke',
    auth: 'bearer',
    enabled: true,
    body: InvokeRequest,
    tag: 'agent',
    summary: 'Run the agent',
    responses: { 200: { description: 'The stream.', events: AgentEvent } },
    errors: ['session_busy'],
  },
  {
    method: 'GET',
    path: '/api/agent/sessions/:session_id/stream',
    auth: 'bearer',
    enabled: true,
    params: ResumeStreamParams,
    tag: 'agent',
    summary: 'Resume',
    parameters: [{ in: 'header', name: 'Last-Event-ID', description: 'The last id.' }],
    responses: { 200: { description: 'The stream.', events: AgentEvent } },
  },
  {
    method: 'GET',
    path: '/healthz',
    auth: 'none',
    enabled: true,
    tag: 'health',
    summary: 'Alive',
    responses: { 200: { description: 'Alive.', json: HealthResponse } },
  },
  {
    method: 'GET',
    path: '/api/memories',
    auth: 'bearer',
    enabled: true,
    query: ListMemoriesQuery,
    tag: 'memories',
    summary: 'List',
    responses: { 200: { description: 'One page.', json: MemoryList } },
  },
  {
    method: 'POST',
    path: '/api/auth/refresh',
    auth: 'none',
    enabled: true,
    body: RefreshRequest,
    tag: 'auth',
    summary: 'Refresh',
    responses: {
      200: { description: 'A token.', json: RefreshResponse },
      401: { description: 'Refused.', json: AuthErrorBody },
    },
  },
  {
    method: 'POST',
    path: '/channels/:platform/webhook',
    auth: 'webhook',
    enabled: true,
    tag: 'chat platform',
    summary: 'Receive an event',
    parameters: [{ in: 'path', name: 'platform', description: 'The platform.' }],
    rawBody: [UrlVerificationBody, EncryptedBody],
    responses: { 200: { description: 'Acknowledged.', json: WebhookAck } },
  },
  {
    method: 'GET',
    path: '/admin/queues',
    mount: true,
    auth: 'admin',
    enabled: false,
    tag: 'operations',
    summary: 'The dashboard',
    responses: { 200: { description: 'A page.', html: true } },
  },
];

describe('OpenAPI document', () => {
  const document = buildOpenApiDocument(ROUTES);
  const paths = document.paths as Record<string, Record<string, Json>>;

  it('is valid OpenAPI 3.1', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    // The validator does catch mistakes.
    const broken = structuredClone(document) as { paths: Record<string, Json> };
    (broken.paths['/healthz']!.get as Json).responses = 'none';
    expect((await new Validator().validate(broken)).valid).toBe(false);
  });

  it('lists exactly the routes it is given, served or not, grouped by tag', () => {
    const listed = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(listed).toEqual([
      'POST /api/agent/invoke',
      'GET /api/agent/sessions/{session_id}/stream',
      'POST /api/auth/refresh',
      'GET /api/memories',
      'POST /channels/{platform}/webhook',
      'GET /healthz',
      'GET /admin/queues',
    ]);
    expect(paths['/admin/queues']!.get!['x-mount']).toBe(true);
    expect(paths['/admin/queues']!.get!.security).toEqual([{ adminToken: [] }, { adminBasic: [] }]);
  });

  it('shows the schemas and the credential of each route', () => {
    const invoke = paths['/api/agent/invoke']!.post!;
    expect(invoke.security).toEqual([{ bearerAuth: [] }]);
    expect(invoke.requestBody).toEqual({
      required: true,
      content: {
        'application/json': { schema: { $ref: '#/components/schemas/InvokeRequestInput' } },
      },
    });
    const responses = invoke.responses as Record<string, Json>;
    expect(responses['200']!.content).toEqual({
      'text/event-stream': { schema: { $ref: '#/components/schemas/AgentEvent' } },
    });
    expect(Object.keys(responses)).toEqual([
      '200',
      '400',
      '401',
      '409',
      '413',
      '415',
      '500',
      '503',
    ]);
    const resume = paths['/api/agent/sessions/{session_id}/stream']!.get!;
    expect(
      (resume.parameters as Json[]).map((p) => `${p.in as string} ${p.name as string}`),
    ).toEqual(['path session_id', 'header Last-Event-ID']);
    const memories = paths['/api/memories']!.get!;
    expect((memories.parameters as Json[]).every((p) => p.in === 'query')).toBe(true);
    expect(paths['/channels/{platform}/webhook']!.post!.security).toEqual([]);
    // The route's own 401 and the `{ error }` answers of that status, merged.
    const refresh = paths['/api/auth/refresh']!.post!.responses as Record<string, Json>;
    expect(refresh['401']!.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/AuthErrorBody' } },
    });
  });

  it('refuses a route of an unknown tag or with an undocumented path parameter', () => {
    const [route] = ROUTES;
    expect(() => buildOpenApiDocument([{ ...route!, tag: 'elsewhere' }])).toThrow(
      'tag "elsewhere" is not in HTTP_TAGS',
    );
    expect(() => buildOpenApiDocument([{ ...route!, path: '/things/:id' }])).toThrow(
      'path parameter id is not documented',
    );
  });
});

describe('AsyncAPI document', () => {
  const document = buildAsyncApiDocument();

  it('is valid AsyncAPI 3.0', () => {
    const validate = asyncApiValidator();
    expect(validate(document) ? [] : validate.errors).toEqual([]);
    const broken = structuredClone(document) as { operations: Record<string, Json> };
    broken.operations.webClientFrames!.action = 'publish';
    expect(validate(broken)).toBe(false);
  });

  it('has every frame of the protocol on its endpoints, in both directions', () => {
    const channels = document.channels as Record<string, Json>;
    const operations = document.operations as Record<string, Json>;
    /** What the gateway sends (`send` operations) or receives (`receive`, and replies to `send`). */
    const payloads = (kind: string, action: 'send' | 'receive') => {
      const messages = channels[kind]!.messages as Record<string, Json>;
      const mine = Object.values(operations).filter(
        (op) => (op.channel as Json).$ref === `#/channels/${kind}`,
      );
      return [
        ...mine.filter((op) => op.action === action).flatMap((op) => op.messages as Json[]),
        ...mine
          .filter((op) => action === 'receive' && op.action === 'send')
          .flatMap((op) => ((op.reply as Json | undefined)?.messages as Json[] | undefined) ?? []),
      ]
        .map((ref) => String(ref.$ref).split('/').pop()!)
        .map((key) => (messages[key]!.payload as Json).$ref as string)
        .map((ref) => ref.replace('#/components/schemas/', '').replace(/Input$/, ''));
    };
    const names = (schemas: readonly z.ZodType[]) => schemas.map((s) => NAMED_SCHEMAS.get(s)!);
    const rpcResponses = names([JsonRpcSuccess, JsonRpcError]);
    for (const kind of ['extension', 'desktop'] as const) {
      expect(channels[kind]!.address).toBe(WS_PATHS[kind]);
      expect(new Set(payloads(kind, 'receive'))).toEqual(
        new Set([...names(NodeClientMessage.options), ...rpcResponses]),
      );
    }
    expect(new Set(payloads('web', 'receive'))).toEqual(new Set(names(WebClientMessage.options)));
    const sentAnywhere = new Set(
      ['extension', 'desktop', 'web'].flatMap((k) => payloads(k, 'send')),
    );
    expect(sentAnywhere).toEqual(
      new Set([...names(ServerMessage.options), NAMED_SCHEMAS.get(ToolCallRequest)!]),
    );
    for (const [type, kinds] of Object.entries(SERVER_MESSAGE_CHANNELS)) {
      const schema = ServerMessage.options.find((option) => option.shape.type.value === type)!;
      for (const kind of kinds) expect(payloads(kind, 'send')).toContain(NAMED_SCHEMAS.get(schema));
    }
    // Every close code is explained.
    expect((document.info as Json).description).toMatch(/\| 4001 \|[^\n]+\n/);
  });
});

describe('docs page', () => {
  it('is one HTML page with its script inline and nothing loaded from elsewhere', () => {
    const { html, script, style } = renderDocsPage();
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).not.toMatch(/(src|href)=["']?(https?:)?\/\//);
    // The inline parts it names are the page's only ones, as its CSP allows them by hash.
    expect(html).toContain(`<script>${script}</script>`);
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html.match(/<style/g)).toHaveLength(1);
    expect(html).toContain(`<style>${style}</style>`);
    expect(() => new Function(script)).not.toThrow();
  });
});
