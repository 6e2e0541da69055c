import type { z } from 'zod';
import {
  ERROR_STATUS,
  type DocumentedRoute as RouteDoc,
  type ErrorCode,
  type ParameterDoc,
  type SchemaRef,
} from '@agent-backend/http-server';
import { ErrorBody } from '@agent-backend/protocol';
import { HTTP_TAGS } from './http-tags.js';
import { SchemaCollector, type JsonSchema } from './json-schema.js';
import { API_TITLE, API_VERSION } from './version.js';

/**
 * The error codes any route may answer with, besides its own: bad input caught before the
 * handler (the text rules, a malformed path, JSON, media type and size of a body), the
 * credential, and the server's own state (shutting down, a bug).
 */
export function commonErrors(route: RouteDoc): ErrorCode[] {
  const codes: ErrorCode[] = ['invalid_request'];
  if (route.path.includes(':')) codes.push('invalid_url');
  if (route.method !== 'GET') {
    if (!route.rawBody) codes.push('invalid_json');
    codes.push('payload_too_large', 'unsupported_media_type');
  }
  if (route.auth !== 'none' && route.auth !== 'webhook') codes.push('unauthorized');
  if (route.auth === 'internal') codes.push('not_configured');
  codes.push('internal_error', 'unavailable');
  return codes;
}

const DESCRIPTION = `The HTTP API of the agent backend service, generated from the zod schemas the service
validates with (\`pnpm docs:api\`). The WebSocket protocol of the gateway is described by the
AsyncAPI document at \`/asyncapi.json\`; both are shown at \`/docs\`.

**Errors.** Every failure answers \`{ "error": { "code", "message", "details"? } }\` with a stable
\`code\` (for programs) and a \`message\` (for people), except where the specification fixes another
shape: the refresh endpoint's 401 \`{ "error": "<message>" }\` and MCP validation's \`{ "detail" }\`.
Invalid input is 400 \`invalid_request\` whose \`details\` list field errors \`[{ "path", "message" }]\`
(\`path\` dot-joined, \`""\` for the body itself). Requests the HTTP parser refuses get 408
\`request_timeout\` or 431 \`headers_too_large\` in the same shape.

**Authentication.** Most routes take an access token (an RS256 JWT from \`POST /api/auth/refresh\`,
valid for one hour) as \`Authorization: Bearer <token>\`; the user is its \`sub\`, never a field of
the request. A refused token is 401 with a \`WWW-Authenticate\` header. The internal
scheduled-task routes take \`X-Internal-Secret\`; the chat-platform webhook is verified by the
platform's signature and token.

**Request ids.** A safe \`X-Request-Id\` is kept (else one is generated) and echoed on every answer.`;

/**
 * Builds the OpenAPI 3.1 document of `routes`: the routes and mounts a role registered with their
 * documentation (`HttpServer.documented()`), served or not, listed by tag in the order of
 * {@link HTTP_TAGS} and in registration order within a tag.
 */
export function buildOpenApiDocument(routes: readonly RouteDoc[]): Record<string, unknown> {
  const schemas = new SchemaCollector({
    target: 'draft-2020-12',
    refPrefix: '#/components/schemas/',
  });
  const tagOrder: readonly string[] = Object.keys(HTTP_TAGS);
  for (const route of routes) {
    if (!tagOrder.includes(route.tag)) {
      throw new Error(`${route.method} ${route.path}: tag "${route.tag}" is not in HTTP_TAGS`);
    }
  }
  const byTag = [...routes].sort((a, b) => tagOrder.indexOf(a.tag) - tagOrder.indexOf(b.tag));
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of byTag) {
    const path = route.path.replace(/:(\w+)/g, '{$1}');
    paths[path] ??= {};
    paths[path][route.method.toLowerCase()] = operation(route, schemas);
  }
  const document: Record<string, unknown> = {
    openapi: '3.1.0',
    info: {
      title: API_TITLE,
      version: API_VERSION,
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: '/', description: 'The service (the api role, or the all-in-one)' }],
    tags: Object.entries(HTTP_TAGS).map(([name, description]) => ({ name, description })),
    paths,
  };
  document.components = {
    schemas: schemas.components(document),
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'An access token (RS256 JWT, one hour) from `POST /api/auth/refresh`.',
      },
      internalSecret: {
        type: 'apiKey',
        in: 'header',
        name: 'X-Internal-Secret',
        description: '`INTERNAL_API_SECRET`; when it is not configured the routes answer 503.',
      },
      adminToken: {
        type: 'http',
        scheme: 'bearer',
        description: '`ADMIN_TOKEN`, an operator credential (never a user access token).',
      },
      adminBasic: {
        type: 'http',
        scheme: 'basic',
        description: 'Any user name with `ADMIN_TOKEN` as the password (for a browser).',
      },
      metricsToken: {
        type: 'http',
        scheme: 'bearer',
        description:
          '`METRICS_TOKEN`, an operator credential for `GET /metrics`, required only when it is configured.',
      },
      serviceToken: {
        type: 'http',
        scheme: 'bearer',
        description:
          "`AUTH_SERVICE_TOKEN`, the operator's login layer's credential (never a user access token).",
      },
    },
  };
  return document;
}

function operation(route: RouteDoc, schemas: SchemaCollector): Record<string, unknown> {
  const op: Record<string, unknown> = {
    operationId: operationId(route),
    tags: [route.tag],
    summary: route.summary,
  };
  if (route.description) op.description = route.description;
  // A mount prefix answers every path below it too (static files, the queue dashboard).
  if (route.mount) op['x-mount'] = true;
  op.security =
    route.auth === 'bearer'
      ? [{ bearerAuth: [] }]
      : route.auth === 'internal'
        ? [{ internalSecret: [] }]
        : route.auth === 'admin'
          ? [{ adminToken: [] }, { adminBasic: [] }]
          : route.auth === 'metrics'
            ? // `{}`: no credential, when `METRICS_TOKEN` is not configured.
              [{ metricsToken: [] }, {}]
            : route.auth === 'service'
              ? [{ serviceToken: [] }]
              : [];
  const parameters = parametersOf(route, schemas);
  if (parameters.length > 0) op.parameters = parameters;
  const body = route.body ?? route.rawBody;
  if (body) {
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: schemaOf(body, 'input', schemas) } },
    };
  }
  op.responses = responsesOf(route, schemas);
  return op;
}

function operationId(route: RouteDoc): string {
  const words = route.path
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `by-${segment.slice(1)}` : segment))
    .flatMap((segment) => segment.split(/[^A-Za-z0-9]+|(?=[A-Z])/))
    .filter(Boolean);
  return [route.method.toLowerCase(), ...words.map((w) => w[0]!.toUpperCase() + w.slice(1))].join(
    '',
  );
}

function parametersOf(route: RouteDoc, schemas: SchemaCollector): Record<string, unknown>[] {
  const parameters: Record<string, unknown>[] = [];
  const fromSchema = (where: 'path' | 'query', schema: z.ZodType) => {
    const json = schemas.inline(schema, 'input');
    const required = new Set((json.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(
      (json.properties as Record<string, JsonSchema>) ?? {},
    )) {
      const { description, ...rest } = property;
      parameters.push({
        name,
        in: where,
        required: where === 'path' || required.has(name),
        ...(typeof description === 'string' ? { description } : {}),
        schema: rest,
      });
    }
  };
  if (route.params) fromSchema('path', route.params);
  if (route.query) fromSchema('query', route.query);
  for (const parameter of route.parameters ?? []) parameters.push(parameterOf(parameter, schemas));
  for (const [, name] of route.path.matchAll(/:(\w+)/g)) {
    if (!parameters.some((p) => p.in === 'path' && p.name === name)) {
      throw new Error(`${route.method} ${route.path}: path parameter ${name} is not documented`);
    }
  }
  return parameters;
}

function parameterOf(parameter: ParameterDoc, schemas: SchemaCollector): Record<string, unknown> {
  return {
    name: parameter.name,
    in: parameter.in,
    required: parameter.required ?? parameter.in === 'path',
    description: parameter.description,
    schema: parameter.schema
      ? schemas.inline(parameter.schema, 'input')
      : { type: 'string', minLength: 1 },
  };
}

function schemaOf(ref: SchemaRef, side: 'input' | 'output', schemas: SchemaCollector): JsonSchema {
  if (!Array.isArray(ref)) return schemas.ref(ref as z.ZodType, side);
  return { anyOf: (ref as readonly z.ZodType[]).map((schema) => schemas.ref(schema, side)) };
}

/** The route's own answers, merged by status with the `{ error }` answers it may give. */
function responsesOf(route: RouteDoc, schemas: SchemaCollector): Record<string, unknown> {
  const responses: Record<string, Record<string, unknown>> = {};
  for (const [status, answer] of Object.entries(route.responses)) {
    const response: Record<string, unknown> = { description: answer.description };
    if (answer.json) {
      response.content = {
        'application/json': { schema: schemaOf(answer.json, 'output', schemas) },
      };
    } else if (answer.events) {
      response.content = { 'text/event-stream': { schema: schemas.ref(answer.events, 'output') } };
    } else if (answer.html) {
      response.content = { 'text/html': { schema: { type: 'string' } } };
    } else if (answer.text) {
      response.content = { 'text/plain': { schema: { type: 'string', description: answer.text } } };
    } else if (answer.binary) {
      response.content = { [answer.binary]: { schema: { type: 'string', format: 'binary' } } };
    } else if (answer.anyJson) {
      response.content = { 'application/json': { schema: { type: 'object' } } };
    }
    if (answer.headers) {
      response.headers = Object.fromEntries(
        Object.entries(answer.headers).map(([name, description]) => [
          name,
          { description, schema: { type: 'string' } },
        ]),
      );
    }
    responses[status] = response;
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...commonErrors(route), ...(route.errors ?? [])])) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const errorSchema = schemas.ref(ErrorBody, 'output');
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    const listed = `\`{ error }\` with code ${codes.map((c) => `\`${c}\``).join(', ')}.`;
    const existing = responses[status];
    if (!existing) {
      responses[status] = {
        description: listed,
        content: { 'application/json': { schema: errorSchema } },
      };
      continue;
    }
    existing.description = `${existing.description as string} Or ${listed}`;
    const content = existing.content as Record<string, { schema: JsonSchema }>;
    const json = content['application/json']!;
    json.schema = {
      anyOf: [...((json.schema.anyOf as JsonSchema[]) ?? [json.schema]), errorSchema],
    };
  }
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => Number(a) - Number(b)));
}
