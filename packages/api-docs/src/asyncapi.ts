import type { z } from 'zod';
import {
  JsonRpcError,
  JsonRpcSuccess,
  NodeClientMessage,
  ServerMessage,
  ToolCallRequest,
  WebClientMessage,
  WS_CLOSE,
  WS_PATHS,
  type WsClientKind,
} from '@agent-backend/protocol';
import { NAMED_SCHEMAS, SchemaCollector, type JsonSchema } from './json-schema.js';
import { API_TITLE, API_VERSION } from './version.js';

/** What each close code of the gateway means, and what a client should do. */
export const WS_CLOSE_MEANINGS: Record<keyof typeof WS_CLOSE, string> = {
  missingIdentity:
    '`client_id` (extension, desktop) or `user_id` (web) is missing. Fix the URL; do not reconnect unchanged.',
  invalidIdentity:
    '`client_id` is not `user_<id>` on /ws/extension or `desktop_<id>` on /ws/desktop, or an id is over 128 characters. Fix the URL.',
  policyViolation:
    'The client kept sending well over `GATEWAY_FRAMES_PER_SECOND` / `GATEWAY_BYTES_PER_SECOND` after `rate_limited` errors (send slower), or, with reason `too many connections`, the user already has `MAX_NODE_CONNECTIONS_PER_USER` node / `MAX_WEB_CONNECTIONS_PER_USER` web connections open across all gateways (close one). Reconnect after a backoff.',
  tryAgainLater:
    'The connection limits cannot be checked (Redis unavailable, `LIMITS_ON_REDIS_ERROR=closed`). Reconnect after a backoff.',
  slowConsumer:
    'Slow consumer: more than `GATEWAY_MAX_BUFFERED_BYTES` unsent. Reconnect after a backoff.',
  replaced:
    'The same node (user + node id) connected again; this older connection is closed. Stop.',
  stale:
    'The URL named `instance_id` and `connection_seq`, and the node already has a later connection of the same instance: this stale one is refused, the later one stays. A client that has moved on ignores it; on its current socket, reconnect after a backoff.',
  unauthorized: 'No access token, or an invalid or expired one. Refresh the token, then reconnect.',
  forbidden: 'The token belongs to another user, or the Origin is not allowed. Stop.',
  tooBig: 'A frame over `GATEWAY_MAX_FRAME_BYTES`. Send smaller frames.',
  goingAway: 'The replica is shutting down. Reconnect (the load balancer picks another replica).',
  operatorDisconnect:
    "The operator disconnected the user's sockets (operator API). Reconnect after a backoff; a user whose tokens were revoked too gets 4401 then.",
};

/** Which connections each server-sent frame type goes to. */
export const SERVER_MESSAGE_CHANNELS: Record<ServerMessage['type'], readonly WsClientKind[]> = {
  registered: ['extension', 'desktop'],
  heartbeat_ack: ['extension', 'desktop', 'web'],
  pong: ['extension', 'desktop', 'web'],
  error: ['extension', 'desktop', 'web'],
  get_workflows: ['extension'],
  execute_workflow: ['extension'],
  workflows_list: ['web'],
  workflow_started: ['web'],
  workflow_complete: ['web'],
  scheduled_task_confirmation: ['web'],
  scheduled_task_result: ['web'],
  node_status: ['web'],
};

/** The JSON-RPC frames on node connections, by message name. */
const RPC_REQUEST = { name: 'tools/call', schema: ToolCallRequest } as const;
const RPC_RESPONSES = [
  { name: 'tools/call result', schema: JsonRpcSuccess },
  { name: 'tools/call error', schema: JsonRpcError },
] as const;

const CHANNEL_TEXT: Record<WsClientKind, { title: string; description: string }> = {
  extension: {
    title: 'Browser extension',
    description:
      'A browser extension node. After connecting it sends `register` (answered `registered`), ' +
      'then `heartbeat` or `ping` periodically. The server calls its tools with JSON-RPC ' +
      "`tools/call` and relays the web clients' workflow requests to it.",
  },
  desktop: {
    title: 'Desktop app',
    description:
      'A desktop app node: the same frames as an extension, without workflows. The server calls ' +
      'its tools with JSON-RPC `tools/call`.',
  },
  web: {
    title: 'Web client',
    description:
      "A web client of a user (any number per user): workflows on the user's extension, " +
      'scheduled-task confirmations and results.',
  },
};

const token = {
  type: 'string',
  description:
    'The access token (also accepted as `Authorization: Bearer`); its `sub` must be the user of the URL.',
};

/** The optional order of a node's connections (`ConnectionOrder`), the same on both node paths. */
const order = {
  instance_id: {
    type: 'string',
    minLength: 1,
    maxLength: 128,
    description:
      'Optional, with `connection_seq`: random for each client instance. A connection never replaces a later one (higher `connection_seq`) of the same instance; it is closed with 4011 instead.',
  },
  connection_seq: {
    type: 'string',
    pattern: '^\\d{1,15}$',
    description:
      'Optional, with `instance_id`: grows with each connection attempt of the instance.',
  },
} as const;

const QUERIES: Record<WsClientKind, JsonSchema> = {
  extension: {
    type: 'object',
    properties: {
      client_id: { type: 'string', pattern: '^user_.+', description: '`user_<user_id>`.' },
      node_id: { type: 'string', description: 'The device; default `ext_<user_id>`.' },
      ...order,
      token,
    },
    required: ['client_id'],
  },
  desktop: {
    type: 'object',
    properties: {
      client_id: { type: 'string', pattern: '^desktop_.+', description: '`desktop_<user_id>`.' },
      node_id: { type: 'string', description: 'The device; default `desktop_<user_id>`.' },
      ...order,
      token,
    },
    required: ['client_id'],
  },
  web: {
    type: 'object',
    properties: {
      user_id: { type: 'string', description: 'The user whose messages this connection gets.' },
      token,
    },
    required: ['user_id'],
  },
};

/** The frames a kind of client sends: its union's members, and JSON-RPC responses from nodes. */
function clientFrames(kind: WsClientKind): Array<{ name: string; schema: z.ZodType }> {
  const union = kind === 'web' ? WebClientMessage : NodeClientMessage;
  const frames = union.options.map((schema) => ({ name: typeOf(schema), schema }));
  return kind === 'web' ? frames : [...frames, ...RPC_RESPONSES];
}

/** The frames the server sends to a kind of client. */
function serverFrames(kind: WsClientKind): Array<{ name: string; schema: z.ZodType }> {
  const frames = ServerMessage.options
    .filter((schema) => SERVER_MESSAGE_CHANNELS[typeOf(schema)].includes(kind))
    .map((schema) => ({ name: typeOf(schema), schema }));
  return kind === 'web' ? frames : [...frames, RPC_REQUEST];
}

function typeOf<T extends z.ZodObject<{ type: z.ZodLiteral<string> }>>(
  schema: T,
): z.output<T>['type'] {
  return schema.shape.type.value;
}

const messageKey = (name: string) =>
  name.replace(/[^A-Za-z0-9]+(.)?/g, (_, c: string) => (c ?? '').toUpperCase());

const closeCodes = Object.entries(WS_CLOSE)
  .map(([key, code]) => `| ${code} | ${WS_CLOSE_MEANINGS[key as keyof typeof WS_CLOSE]} |`)
  .join('\n');

const DESCRIPTION = `The WebSocket protocol of the gateway (three endpoints), generated from the zod schemas the
service validates frames with (\`pnpm docs:api\`). The document describes the gateway: \`receive\`
operations are frames clients send, \`send\` operations frames the gateway sends.

Every frame is one JSON object. Frames with a \`type\` are selected by it; JSON-RPC 2.0 tool calls
(server to node: \`tools/call\`; node to server: a result or an error with the same \`id\`) carry
\`jsonrpc\` instead. A frame the server cannot accept is answered with an \`error\` frame (codes
\`invalid_json\`, \`invalid_message\`, \`unknown_type\`, \`internal_error\`; \`task_forbidden\` for a
\`task_complete\` naming another user's workflow run; \`too_many_tools\` for a \`register\` over the
gateway's tools-per-node bound) and the connection stays open.

A refused or ended connection is closed with one of these codes:

| code | meaning |
|---|---|
${closeCodes}

Other paths get HTTP 404 at the upgrade; a replica that is shutting down answers 503.`;

/** Builds the AsyncAPI 3.0 document of the WebSocket protocol. */
export function buildAsyncApiDocument(): Record<string, unknown> {
  // AsyncAPI's default schema format is a superset of JSON Schema draft-07.
  const schemas = new SchemaCollector({ target: 'draft-07', refPrefix: '#/components/schemas/' });
  const channels: Record<string, unknown> = {};
  const operations: Record<string, unknown> = {};
  const kinds = Object.keys(WS_PATHS) as WsClientKind[];
  for (const kind of kinds) {
    const messages: Record<string, unknown> = {};
    const add = (frames: Array<{ name: string; schema: z.ZodType }>, side: 'input' | 'output') =>
      frames.map(({ name, schema }) => {
        const key = messageKey(name);
        if (messages[key]) throw new Error(`${kind}: two messages named ${key}`);
        messages[key] = {
          name,
          title: NAMED_SCHEMAS.get(schema),
          contentType: 'application/json',
          payload: schemas.ref(schema, side),
        };
        return { $ref: `#/channels/${kind}/messages/${key}` };
      });
    const received = add(clientFrames(kind), 'input');
    const sent = add(serverFrames(kind), 'output');
    channels[kind] = {
      address: WS_PATHS[kind],
      title: CHANNEL_TEXT[kind].title,
      description: CHANNEL_TEXT[kind].description,
      messages,
      bindings: { ws: { method: 'GET', query: QUERIES[kind], bindingVersion: '0.1.0' } },
    };
    const channel = { $ref: `#/channels/${kind}` };
    operations[`${kind}ClientFrames`] = {
      action: 'receive',
      channel,
      title: `Frames from a ${CHANNEL_TEXT[kind].title.toLowerCase()}`,
      messages: received,
    };
    operations[`${kind}ServerFrames`] = {
      action: 'send',
      channel,
      title: `Frames to a ${CHANNEL_TEXT[kind].title.toLowerCase()}`,
      messages: sent,
    };
    if (kind !== 'web') {
      operations[`${kind}ToolCall`] = {
        action: 'send',
        channel,
        title: 'Call a tool on the node (JSON-RPC 2.0)',
        description:
          'Addressed by user, node type, optional node id and tool name; the response with the ' +
          'same `id` answers it (60 s deadline by default). Code -32603: the tool failed.',
        messages: [{ $ref: `#/channels/${kind}/messages/${messageKey(RPC_REQUEST.name)}` }],
        reply: {
          channel,
          messages: RPC_RESPONSES.map(({ name }) => ({
            $ref: `#/channels/${kind}/messages/${messageKey(name)}`,
          })),
        },
      };
    }
  }
  const document: Record<string, unknown> = {
    asyncapi: '3.0.0',
    info: {
      title: `${API_TITLE}: WebSocket gateway`,
      version: API_VERSION,
      description: DESCRIPTION,
      license: { name: 'MIT' },
    },
    defaultContentType: 'application/json',
    servers: {
      gateway: {
        host: '{host}',
        protocol: 'ws',
        description:
          'A gateway replica (or the all-in-one), usually behind the load balancer; `wss` behind TLS.',
        variables: { host: { default: 'localhost:8000' } },
        security: [
          { $ref: '#/components/securitySchemes/tokenQuery' },
          { $ref: '#/components/securitySchemes/bearer' },
        ],
      },
    },
    channels,
    operations,
  };
  document.components = {
    schemas: schemas.components(document),
    securitySchemes: {
      tokenQuery: {
        type: 'httpApiKey',
        in: 'query',
        name: 'token',
        description: 'The access token as the `token` query parameter (redacted from logs).',
      },
      bearer: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'The access token as `Authorization: Bearer` (clients that can set headers).',
      },
    },
  };
  return document;
}
