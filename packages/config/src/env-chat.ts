import { z } from 'zod';
import { optionalString, booleanString, url, commaList, originList } from './env-fields.js';

/**
 * How runs reach the outside: the default model, the origins users' URLs may reach, MCP servers,
 * the chat platform, and the gateway's WebSockets and node tool calls.
 */
export const chatEnv = {
  DEFAULT_LLM_BASE_URL: url(['http:', 'https:']).describe(
    'the model server of scheduled-task runs and chat-platform replies (invoke requires its own `llm_config`), at the temperature of an `llm_config` without one (0.7); operator-configured, so not behind the SSRF guard',
  ),
  DEFAULT_LLM_API_KEY: optionalString.describe('its API key'),
  DEFAULT_LLM_MODEL: optionalString.describe('its model name'),
  MCP_ALLOW_PRIVATE_NETWORKS: booleanString.describe(
    '`true` lets MCP and other user-supplied URLs (model base URLs too) reach loopback, private, link-local and unspecified addresses; cloud metadata stays refused',
  ),
  CORS_ALLOWED_ORIGINS: originList.describe(
    "comma-separated origins (`https://app.example.com,http://localhost:5173`) of web pages that may call every API route from another origin: preflights are answered, and the answers carry `Access-Control-Allow-Origin` (no credentials mode: the API takes bearer tokens, not cookies). Each entry is an exact origin (scheme, host, port; no path); a bad entry stops the start naming it. When set, a `/ws/web` upgrade whose `Origin` is neither the service's own nor listed here (nor in `GATEWAY_WEB_ORIGINS`) is refused with 403. Empty: no CORS header at all ([`clients.md`](clients.md#calling-from-another-origin-cors))",
  ),
  LLM_ALLOWED_ORIGINS: originList.describe(
    "comma-separated origins (`http://127.0.0.1:11434,http://192.168.1.20:1234`) of model servers that users' `llm_config.baseUrl` may reach although they are on loopback or a private network: Ollama, LM Studio or vLLM on the host. Exactly those scheme, host and port combinations, for model requests only: MCP URLs stay under `MCP_ALLOW_PRIVATE_NETWORKS`. Each entry must be a bare origin (no path: `http://127.0.0.1:11434`, not `.../v1`), not a cloud metadata address; a bad entry stops the start naming it. A name (`http://ollama.lan:11434`) is trusted whatever it resolves to, except a metadata address. Redirects are never followed for model requests, so an allowed origin cannot hand a request on",
  ),
  MCP_STDIO_ALLOWLIST: commaList.describe(
    'comma-separated commands the `stdio` MCP transport may start',
  ),
  MCP_VALIDATE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(300_000)
    .default(15_000)
    .describe(
      'deadline of one MCP validation (connect, handshake, every listing page); past it the answer is 408 (see [`mcp.md`](mcp.md))',
    ),
  LARK_APP_ID: optionalString.describe(
    'chat-platform app id; unset (or without `LARK_APP_SECRET`): no replies are sent',
  ),
  LARK_APP_SECRET: optionalString.describe('chat-platform app secret'),
  LARK_VERIFICATION_TOKEN: optionalString.describe(
    'chat-platform event verification token; unset: not checked',
  ),
  LARK_ENCRYPT_KEY: optionalString.describe(
    'chat-platform event encryption and signature key; unset: events are not decrypted or signature-checked',
  ),
  LARK_API_BASE_URL: url(['http:', 'https:']).describe("the chat platform's API origin"),
  GATEWAY_WEB_ORIGINS: commaList.describe(
    'origins allowed to open `/ws/web`, comma-separated; empty allows any origin ([`gateway.md`](gateway.md))',
  ),
  GATEWAY_ALLOW_UNAUTHENTICATED: booleanString.describe(
    'accept WebSockets without a token, for legacy clients that cannot send one (never in production)',
  ),
  GATEWAY_MAX_TOOLS_PER_NODE: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_024)
    .default(128)
    .describe(
      'tools one node may register (`available_tools` and `tools` names together); a `register` with more gets an `error` with code `too_many_tools` and `registered` with `success: false`, and the node keeps its previous tools (see [`gateway.md`](gateway.md#messages)). Whatever this says, one `register` carries at most 256 `tools` descriptors (the protocol bound)',
    ),
  GATEWAY_MAX_FRAME_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024)
    .describe('largest WebSocket frame accepted; a larger one closes the connection with 1009'),
  GATEWAY_FRAMES_PER_SECOND: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(50)
    .describe(
      "frames a second one WebSocket connection may send, a token bucket holding one second's worth; over it the frame is dropped with an `error` `rate_limited` (once per run of dropped frames), and a connection that keeps sending well over it (two seconds' worth of drops not yet forgiven) is closed with 1008 ([limits.md](limits.md)); `0`: not counted",
    ),
  GATEWAY_BYTES_PER_SECOND: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024 * 1024)
    .describe(
      'bytes a second one WebSocket connection may send (the bucket holds at least one `GATEWAY_MAX_FRAME_BYTES` frame); the same answers; `0`: not counted',
    ),
  GATEWAY_MAX_BUFFERED_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024)
    .describe(
      'unsent bytes a client may let pile up before it is closed as a slow consumer (4008)',
    ),
  GATEWAY_PING_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe(
      'interval of server-side WebSocket pings; a peer that misses one is terminated. At 2/3 of `NODE_SILENT_TIMEOUT_MS` or more, a node that sends no heartbeat of its own drops out of presence between pongs (a `config_warning` at start)',
    ),
  NODE_SILENT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(90_000)
    .describe(
      'a node that sent nothing (no frame, no pong) for this long is gone from presence; keep it above 1.5 × `GATEWAY_PING_INTERVAL_MS`, or a node whose only frames are pongs drops out between them (a `config_warning` at start)',
    ),
  GATEWAY_REPLICA_TTL_MS: z.coerce
    .number()
    .int()
    .min(300)
    .default(10_000)
    .describe(
      'a gateway replica that stopped heartbeating for this long is dead, and so are its nodes',
    ),
  TOOL_CALL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(60_000)
    .describe('default deadline of a tool call to a node (60 s); callers may pass their own'),
  WORKFLOW_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(300_000)
    .describe('deadline of a workflow run on an extension (300 s)'),
};
