import { createRequire } from 'node:module';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  JsonRpcError,
  JsonRpcSuccess,
  NodeClientMessage,
  ServerMessage,
  ToolCallRequest,
  WebClientMessage,
  WS_PATHS,
} from '@agent-backend/protocol';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  HTTP_ROUTES,
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

describe('OpenAPI document', () => {
  const document = buildOpenApiDocument();

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

  it('lists every route of the table once, with its parameters and answers', () => {
    const paths = document.paths as Record<string, Record<string, Json>>;
    const listed = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const table = HTTP_ROUTES.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`);
    expect(new Set(table).size).toBe(table.length);
    expect(listed.sort()).toEqual([...table].sort());
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
    expect(paths['/scheduled-task/sync']!.post!.security).toEqual([{ internalSecret: [] }]);
    expect(paths['/channels/{platform}/webhook']!.post!.security).toEqual([]);
    const refresh = paths['/api/auth/refresh']!.post!.responses as Record<string, Json>;
    expect(refresh['401']!.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/AuthErrorBody' } },
    });
  });

  it('describes bodies with the protocol schemas themselves', () => {
    const named = (schema: z.ZodType | readonly z.ZodType[] | undefined) =>
      (Array.isArray(schema) ? schema : schema ? [schema] : []).every((s) => NAMED_SCHEMAS.has(s));
    for (const route of HTTP_ROUTES) {
      const where = `${route.method} ${route.path}`;
      expect(named(route.body), where).toBe(true);
      expect(named(route.rawBody), where).toBe(true);
      for (const answer of Object.values(route.responses)) {
        expect(named(answer.json) && named(answer.events), where).toBe(true);
      }
      expect(!route.query || NAMED_SCHEMAS.has(route.query), where).toBe(true);
      expect(!route.params || NAMED_SCHEMAS.has(route.params), where).toBe(true);
    }
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
