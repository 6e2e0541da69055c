import { z } from 'zod';
import { EnvSchema } from './schema.js';

/**
 * What each environment variable means, for people: `docs/configuration.md` is generated from
 * this and the schema (`pnpm docs:config`; a test fails when the file is stale). Type and default
 * come from the schema itself, so they cannot drift; the compiler refuses a variable without an
 * entry here, or an entry without a variable.
 */
export const ENV_MEANINGS = {
  PORT: 'listen port (0: any free port; the log line `listening` names it)',
  HOST: 'listen address',
  REDIS_URL: '`redis://` or `rediss://`. Unset: in-process bus, presence and ephemeral keys',
  REDIS_COMMAND_TIMEOUT_MS:
    'a Redis command of a request (including adding a job or a schedule) without a reply after this long fails (the request gets 503 `unavailable`); blocking reads and BullMQ workers are not affected',
  REDIS_KEY_PREFIX:
    'prefix of every Redis key and channel, so deployments (and tests) can share a Redis',
  DATABASE_URL: '`postgres://`. Unset: PGlite under `DATA_DIR/pglite`',
  DATABASE_QUERY_TIMEOUT_MS:
    'a PostgreSQL statement running longer is cancelled by the server; one whose reply does not come within 1 s more (a stalled network or server) is given up and its connection closed; waiting this long for a connection fails too. The request gets 503 `unavailable`. `0`: no limit. Migrations and the vector-search preparation at start are not limited. Raise it if single statements rightly take longer (deleting a knowledge base of millions of chunks)',
  DATABASE_SCHEMA:
    "PostgreSQL schema for every table (created if missing); unset: the connection's default",
  DATA_DIR: "PGlite files, generated development keys, the all-in-one's control socket",
  INSTANCE_ID: "this replica's id on the bus and in presence",
  JWT_PUBLIC_KEY:
    'RS256 public key, SPKI PEM (inline `\\n` escapes are accepted). Required for api and gateway (or `JWT_PUBLIC_KEY_FILE`)',
  JWT_PUBLIC_KEY_FILE: 'a file holding `JWT_PUBLIC_KEY` (set one of the two)',
  JWT_PRIVATE_KEY: 'RS256 private key, PKCS8 PEM. Required for api (or `JWT_PRIVATE_KEY_FILE`)',
  JWT_PRIVATE_KEY_FILE: 'a file holding `JWT_PRIVATE_KEY` (set one of the two)',
  DEV_TOKENS:
    "development only: `POST /api/dev/tokens` issues a token pair for any user id (the playground's mint button, `pnpm demo`). Never in production: anyone reaching the service could act as any user",
  PLAYGROUND_DEMO_MODEL_URL:
    'set by `pnpm demo`: the scripted demo model (an OpenAI-compatible base URL) the playground offers, labelled as scripted',
  INTERNAL_API_SECRET: 'secret for `POST /scheduled-task/sync`; unset: that endpoint answers 503',
  DEFAULT_LLM_BASE_URL:
    'the model server of scheduled-task runs and chat-platform replies (invoke requires its own `llm_config`); operator-configured, so not behind the SSRF guard',
  DEFAULT_LLM_API_KEY: 'its API key',
  DEFAULT_LLM_MODEL: 'its model name',
  MCP_ALLOW_PRIVATE_NETWORKS:
    '`true` lets MCP and other user-supplied URLs (model base URLs too) reach loopback, private, link-local and unspecified addresses; cloud metadata stays refused',
  LLM_ALLOWED_ORIGINS:
    "comma-separated origins (`http://127.0.0.1:11434,http://192.168.1.20:1234`) of model servers that users' `llm_config.baseUrl` may reach although they are on loopback or a private network: Ollama, LM Studio or vLLM on the host. Exactly those scheme, host and port combinations, for model requests only: MCP URLs stay under `MCP_ALLOW_PRIVATE_NETWORKS`. Each entry must be a bare origin (no path: `http://127.0.0.1:11434`, not `.../v1`), not a cloud metadata address; a bad entry stops the start naming it. A name (`http://ollama.lan:11434`) is trusted whatever it resolves to, except a metadata address. Redirects are never followed for model requests, so an allowed origin cannot hand a request on",
  MCP_STDIO_ALLOWLIST: 'comma-separated commands the `stdio` MCP transport may start',
  MCP_VALIDATE_TIMEOUT_MS:
    'deadline of one MCP validation (connect, handshake, every listing page); past it the answer is 408 (see [`mcp.md`](mcp.md))',
  LARK_APP_ID: 'chat-platform app id; unset (or without `LARK_APP_SECRET`): no replies are sent',
  LARK_APP_SECRET: 'chat-platform app secret',
  LARK_VERIFICATION_TOKEN: 'chat-platform event verification token; unset: not checked',
  LARK_ENCRYPT_KEY:
    'chat-platform event encryption and signature key; unset: events are not decrypted or signature-checked',
  LARK_API_BASE_URL: "the chat platform's API origin",
  GATEWAY_WEB_ORIGINS:
    'origins allowed to open `/ws/web`, comma-separated; empty allows any origin ([`gateway.md`](gateway.md))',
  GATEWAY_ALLOW_UNAUTHENTICATED:
    'accept WebSockets without a token, for legacy clients that cannot send one (never in production)',
  GATEWAY_MAX_TOOLS_PER_NODE:
    'tools one node may register (`available_tools` and `tools` names together); a `register` with more gets an `error` with code `too_many_tools` and `registered` with `success: false`, and the node keeps its previous tools (see [`gateway.md`](gateway.md#messages)). Whatever this says, one `register` carries at most 256 `tools` descriptors (the protocol bound)',
  GATEWAY_MAX_FRAME_BYTES:
    'largest WebSocket frame accepted; a larger one closes the connection with 1009',
  GATEWAY_FRAMES_PER_SECOND:
    "frames a second one WebSocket connection may send, a token bucket holding one second's worth; over it the frame is dropped with an `error` `rate_limited` (once per run of dropped frames), and a connection that keeps sending well over it (two seconds' worth of drops not yet forgiven) is closed with 1008 ([limits.md](limits.md)); `0`: not counted",
  GATEWAY_BYTES_PER_SECOND:
    'bytes a second one WebSocket connection may send (the bucket holds at least one `GATEWAY_MAX_FRAME_BYTES` frame); the same answers; `0`: not counted',
  GATEWAY_MAX_BUFFERED_BYTES:
    'unsent bytes a client may let pile up before it is closed as a slow consumer (4008)',
  GATEWAY_PING_INTERVAL_MS:
    'interval of server-side WebSocket pings; a peer that misses one is terminated',
  NODE_SILENT_TIMEOUT_MS:
    'a node that sent nothing (no frame, no pong) for this long is gone from presence',
  GATEWAY_REPLICA_TTL_MS:
    'a gateway replica that stopped heartbeating for this long is dead, and so are its nodes',
  TOOL_CALL_TIMEOUT_MS:
    'default deadline of a tool call to a node (60 s); callers may pass their own',
  WORKFLOW_TIMEOUT_MS: 'deadline of a workflow run on an extension (300 s)',
  SMTP_URL:
    '`smtp://` or `smtps://` (credentials in the URL) for scheduled-task email notifications; unset: email channels are logged and skipped (see [`scheduled-tasks.md`](scheduled-tasks.md))',
  EMAIL_FROM: 'sender of notification emails',
  JOBS_LOCK_MS:
    'BullMQ job lock: a job whose worker died (or stopped renewing) is delivered again after about this long',
  JOBS_KEEP_COMPLETED_MS:
    'a completed job is deleted from its queue once it is this old (checked when a later job of the queue completes); while kept, its id deduplicates adds (see [`operations.md`](operations.md#job-retention))',
  JOBS_KEEP_COMPLETED_COUNT:
    'at most this many completed jobs are kept per queue, the newest; `0` deletes each at once',
  JOBS_KEEP_FAILED_MS:
    'a job whose every attempt failed is deleted from its queue once it is this old (checked when a later job of the queue fails); kept for the queue dashboard',
  JOBS_KEEP_FAILED_COUNT: 'at most this many failed jobs are kept per queue, the newest',
  SCHEDULED_TASK_CONFIRM_TTL_MS:
    "how long a `require-confirmation` run waits for the user's answer before it expires",
  EMBEDDINGS_BASE_URL:
    "OpenAI-compatible API root (`https://api.openai.com/v1`, a local server's `/v1`) used to embed knowledge-base chunks (worker) and search queries (api); unset: knowledge search is full-text only (see [`knowledge-base.md`](knowledge-base.md)). Operator-configured, so not behind the SSRF guard",
  EMBEDDINGS_API_KEY: 'its key (sent as `Authorization: Bearer`); never logged',
  EMBEDDINGS_MODEL:
    'the embedding model; required with `EMBEDDINGS_BASE_URL`. Stored with every chunk: chunks are only compared with queries embedded by the same model',
  EMBEDDINGS_DIMENSIONS:
    "vector size to ask for (`dimensions`, for models that take it); unset: the model's own size",
  EMBEDDINGS_BATCH_SIZE: 'chunks per embeddings request',
  EMBEDDINGS_TIMEOUT_MS:
    'deadline of one embeddings request (the client retries twice more on 408/409/429/5xx)',
  KNOWLEDGE_PGVECTOR:
    '`auto`: store vectors (knowledge-base chunks and memories) in pgvector `vector` columns where the extension is installed or can be created; `off`: keep `real[]` and compare in plain SQL',
  KNOWLEDGE_REEMBED:
    '`auto`: when a worker starts with embeddings configured, it queues the re-ingestion of every ready document without vectors of `EMBEDDINGS_MODEL` (and `EMBEDDINGS_DIMENSIONS`), e.g. after the model changed or embeddings were configured later; `off`: those documents stay searchable by their words only',
  AGENT_MAX_STEPS:
    'model requests per agent run (1-200) before it ends with `max_steps_exceeded`; every kind of run (invoke, scheduled, chat)',
  AGENT_LLM_TIMEOUT_MS: 'time to the response headers of one model request, per attempt',
  AGENT_LLM_MAX_RETRIES:
    'retries (0-5) of a model request on 408/409/429/5xx and connection errors',
  AGENT_LLM_IDLE_TIMEOUT_MS: 'longest silence inside a streamed model answer before `llm_timeout`',
  AGENT_KEEPALIVE_MS: 'an SSE `: keepalive` comment after this long without a write (api)',
  AGENT_SSE_STALL_TIMEOUT_MS:
    'an SSE stream whose client took no bytes for this long (it stopped reading) is ended; the client resumes with Last-Event-ID (api)',
  AGENT_DISCONNECT_GRACE_MS:
    'how long a run outlives its last SSE client before it is aborted (0: at once)',
  AGENT_SESSION_LEASE_MS:
    "session lease lifetime, renewed every third of it while the run lives; a crashed replica's session frees after about this long",
  AGENT_MAX_TOOLS:
    "tools one run offers the model in all, built-in ones included (OpenAI's API accepts 128 per request); over it, the user's device tools are left out first (the last devices' last tools), then other sources' from the last source, and the run starts with a `tools_limited` notice (see [`agent.md`](agent.md#tools-of-a-run))",
  AGENT_MAX_TOOL_NODES:
    "a user's devices (nodes) whose tools one run offers, the longest connected first; the others' tools are not offered (`tools_limited` notice)",
  AGENT_MAX_PARALLEL_TOOLS:
    "tool calls of one model turn executing at the same time (1-64); each node's `max_concurrent_tasks` also bounds a run's calls to that node; `1` runs the calls one after the other in the model's order, as before; every kind of run",
  SKILLS_DIR:
    "the operator's skills: a folder of skill folders, each with a `SKILL.md`, offered to every user next to the shipped `skills/`; a skill here replaces a shipped one of the same name. Invalid skills are logged at start and left out (see [`skills.md`](skills.md))",
  SANDBOX_LOCAL_ROOT:
    "enables `sandbox_mode: local` (bubblewrap, [`sandbox.md`](sandbox.md)): each user's `working_directory` must resolve, after symlinks, inside `<root>/<user id>` (the id as one path segment; a relative `working_directory` starts there). Unset: local runs get no code tools and a `notice`",
  SANDBOX_STATE_DIR:
    "local sandboxes' own state (a private `/tmp` each, metadata); replicas on one host share it so any of them reconnects to a session's sandbox",
  SANDBOX_LOCAL_NETWORK:
    "give local sandboxes the host's network (off: a network namespace with nothing in it; Docker: network `none`, on: `bridge`)",
  SANDBOX_LOCAL_RUNTIME:
    "what runs local sandboxes: `bwrap` (bubblewrap, no daemon) or `docker` (a container per session through the Docker Engine API; Podman's compatible API works too) ([`sandbox.md`](sandbox.md#local-docker))",
  DOCKER_HOST: 'the engine of `SANDBOX_LOCAL_RUNTIME=docker`: `unix:///path` or `tcp://host:port`',
  SANDBOX_DOCKER_IMAGE:
    'the image sandbox containers run; it needs bash, coreutils (`timeout`), python3 (with matplotlib for figures) and node: `infra/sandbox.Dockerfile` builds one',
  SANDBOX_DOCKER_USER:
    "`uid:gid` code runs as in containers; unset: the service's own (so files it writes in the working directory are the service's)",
  SANDBOX_CALL_TIMEOUT_MS:
    'deadline of one `execute_code` / `run_command` call; past it the call is killed with everything it started and the tool answers an error',
  SANDBOX_MAX_OUTPUT_BYTES:
    'stdout and stderr of one call are each cut here (marked in the result); also the most `read_file` reads',
  SANDBOX_IDLE_TIMEOUT_MS:
    "a session's sandbox unused this long is paused by the worker's sweep (bubblewrap: nothing runs between calls, so there is nothing to stop; Docker: the container is stopped, killing what runs in it, and a container also stops itself after this long without a call when no worker runs; E2B: paused)",
  SANDBOX_MAX_IDLE_MS:
    "a session's sandbox unused this long is destroyed with its `/tmp` (the user's working directory stays)",
  SANDBOX_SWEEP_INTERVAL_MS:
    'how often one worker (elected per interval in the ephemeral store) pauses, destroys and reaps sandboxes',
  SANDBOX_CREATE_LEASE_MS:
    "how long one replica may take to create a session's sandbox before another may; sandboxes no session records are reaped once twice this old",
  SANDBOX_DEPLOYMENT:
    "label in every sandbox's metadata; the sweep only reaps its own deployment's sandboxes",
  SANDBOX_CLOUD_PROVIDER:
    '`e2b`: `cloud` runs (also runs without a `sandbox_mode`) run code in E2B sandboxes ([`sandbox.md`](sandbox.md#cloud-e2b)); needs `E2B_API_KEY`. Unset: runs that ask for `cloud` get no code tools and a `notice`; runs without a `sandbox_mode` get no code tools',
  E2B_API_KEY: "E2B's API key (sent as `X-API-KEY`); required with `SANDBOX_CLOUD_PROVIDER=e2b`",
  E2B_TEMPLATE:
    'the E2B template sandboxes start from; it needs `python3` (with matplotlib for figures), `node` and `bash`',
  E2B_API_URL:
    "E2B's control API (self-hosted E2B, tests); unset: the SDK's, `https://api.<E2B_DOMAIN>`",
  E2B_SANDBOX_URL: "one origin for every sandbox's envd (E2B's sandbox proxy); unset: the SDK's",
  E2B_DOMAIN: "E2B's domain (regional or self-hosted E2B); unset: `e2b.app`",
  E2B_SANDBOX_LIFETIME_MS:
    'E2B pauses a sandbox this long after it was created or last reconnected (each run reconnects): a safety net under the idle sweep for when no worker runs',
  TAVILY_API_KEY:
    "Tavily's key for `web_search` ([`web-search.md`](web-search.md)); unset: Tavily is not used",
  TAVILY_API_BASE_URL: "Tavily's origin",
  BRAVE_SEARCH_API_KEY: "Brave Search's key (`X-Subscription-Token`); unset: Brave is not used",
  BRAVE_SEARCH_API_BASE_URL: "Brave Search's origin",
  WEB_SEARCH_PROVIDERS:
    'the order providers are tried in (those with a key). No provider: `enable_web_search` runs get no tool and a `notice`',
  WEB_SEARCH_TIMEOUT_MS: 'deadline of one provider call; past it the next provider is tried',
  WEB_SEARCH_CACHE_TTL_MS:
    "how long a query's results are reused, in the ephemeral store (0: no cache)",
  WEB_SEARCH_BREAKER_FAILURES: 'consecutive failures after which a provider is skipped',
  WEB_SEARCH_BREAKER_COOLDOWN_MS: 'how long a failing provider is skipped before one probe',
  GITHUB_API_BASE_URL:
    "GitHub's API origin for the SaaS account tools ([`saas-tools.md`](saas-tools.md))",
  GITHUB_OAUTH_TOKEN_URL: "GitHub's token endpoint, where expired tokens are refreshed",
  GITHUB_CLIENT_ID:
    "the operator's OAuth client for GitHub; without it, that provider's expired tokens become a tool error asking the user to reconnect",
  GITHUB_CLIENT_SECRET: 'its client secret',
  GMAIL_API_BASE_URL: "Gmail's API origin",
  GOOGLE_DRIVE_API_BASE_URL: "Google Drive's API origin",
  GOOGLE_OAUTH_TOKEN_URL: "Google's token endpoint (Gmail and Drive share it)",
  GOOGLE_CLIENT_ID:
    "the operator's OAuth client for Google (Gmail and Drive); without it, that provider's expired tokens become a tool error asking the user to reconnect",
  GOOGLE_CLIENT_SECRET: 'its client secret',
  SLACK_API_BASE_URL: "Slack's Web API origin",
  SLACK_OAUTH_TOKEN_URL: "Slack's token endpoint",
  SLACK_CLIENT_ID:
    "the operator's OAuth client for Slack; without it, that provider's expired tokens become a tool error asking the user to reconnect",
  SLACK_CLIENT_SECRET: 'its client secret',
  NOTION_API_BASE_URL: "Notion's API origin",
  NOTION_OAUTH_TOKEN_URL: "Notion's token endpoint",
  NOTION_CLIENT_ID:
    "the operator's OAuth client for Notion; without it, that provider's expired tokens become a tool error asking the user to reconnect",
  NOTION_CLIENT_SECRET: 'its client secret',
  SAAS_CALL_TIMEOUT_MS: 'whole deadline of one SaaS tool call, refresh and retry included',
  SAAS_MAX_RETRY_AFTER_MS:
    "a rate-limited SaaS call (429, GitHub's 403 with `x-ratelimit-remaining: 0`, ...) is retried once when the wait it asks for (`Retry-After`, `x-ratelimit-reset`, 1 s) is at most this and fits the deadline",
  RATE_LIMIT_INVOKE_PER_MINUTE:
    'agent runs (`POST /api/agent/invoke`) one user may start a minute, counted for the whole deployment; over it 429 `rate_limited` with `Retry-After` ([limits.md](limits.md)); `0`: off',
  RATE_LIMIT_DECISIONS_PER_MINUTE: 'approval decisions one user may send a minute; `0`: off',
  RATE_LIMIT_KNOWLEDGE_UPLOAD_PER_MINUTE:
    'knowledge documents one user may upload a minute; `0`: off',
  RATE_LIMIT_KNOWLEDGE_SEARCH_PER_MINUTE: 'knowledge searches one user may run a minute; `0`: off',
  RATE_LIMIT_MCP_VALIDATE_PER_MINUTE:
    'MCP server validations one user may start a minute; `0`: off',
  RATE_LIMIT_WRITES_PER_MINUTE: 'memory and skill writes one user may make a minute; `0`: off',
  RATE_LIMIT_NODE_TOOL_CALLS_PER_MINUTE:
    'node tool calls over HTTP one user may make a minute; `0`: off',
  CHAT_MESSAGES_PER_CHAT_PER_MINUTE:
    'chat-platform messages of one chat answered by an agent run a minute; more are acknowledged and answered with a short notice instead of a run ([limits.md](limits.md)); `0`: off',
  CHAT_MESSAGES_PER_PLATFORM_PER_MINUTE:
    'chat-platform messages of one platform (all chats together) answered by a run a minute; more get the same notice; `0`: off',
  MAX_CONCURRENT_RUNS_PER_USER:
    'agent runs one user may have going at once across all replicas; another invoke gets 429 `rate_limited` before any model request; `0`: no limit',
  RUN_SLOT_LEASE_MS:
    "a run slot is renewed by its replica every third of this; a crashed replica's slots are free again within it",
  LIMITS_ON_REDIS_ERROR:
    '`open` (default): while Redis cannot be reached the limits let requests through unchecked (logged); `closed`: requests under a limit get 429 `rate_limited` (`details.reason: "limits_unavailable"`) with `Retry-After: 5`. Never a 5xx',
  METRICS_ENABLED:
    '`GET /metrics` in the Prometheus text format on every role ([operations.md](operations.md)); `false`: that path is 404 and nothing is measured',
  METRICS_TOKEN:
    'when set, `GET /metrics` requires `Authorization: Bearer <token>` (401 otherwise; compared in constant time). At least 16 characters. Unset: open, so keep the port off the internet or set it',
  ADMIN_TOKEN:
    "operator credential of the queue dashboard at `/admin/queues` (api role and all-in-one, BullMQ engine only): `Authorization: Bearer <token>`, or HTTP Basic with any user name and the token as password (a browser asks). At least 16 characters. Unset: the dashboard is 404. Never a user's access token",
  OTEL_EXPORTER_OTLP_ENDPOINT:
    "base URL of an OpenTelemetry collector speaking OTLP; over HTTP spans go to `<url>/v1/traces`. Set: traces are on (see Traces in [operations.md](operations.md)); unset: off, and the OpenTelemetry SDK is not even loaded. The SDK's other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_RESOURCE_ATTRIBUTES`, ...) apply too",
  OTEL_EXPORTER_OTLP_PROTOCOL:
    "`http/protobuf` (unset: the OpenTelemetry default), `http/json`, or `grpc` (the endpoint is then the collector's gRPC port, e.g. `http://otel-collector:4317`)",
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL:
    'the same for traces only; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`',
  OTEL_SERVICE_NAME:
    "the traces' `service.name`; unset: `agent-backend-<role>` (`agent-backend-api`, ...)",
  OTEL_BSP_SCHEDULE_DELAY: 'milliseconds finished spans wait to be exported in one batch',
  OTEL_TRACES_SAMPLER:
    "which traces are recorded and exported, as the OpenTelemetry specification names them: `parentbased_*` follow the caller's decision (the `traceparent` sampled flag, the bus envelope's, the scheduling request's) and apply the rest of the name to traces that start here; `traceidratio` keeps that fraction of trace ids. A trace not sampled costs a span id and a context switch per span, and is not exported. Log lines carry its `trace_id` all the same (see Traces in [operations.md](operations.md))",
  OTEL_TRACES_SAMPLER_ARG:
    'the fraction of traces the `traceidratio` samplers keep, e.g. `0.1`; ignored by the other samplers',
  LOG_LEVEL: '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`',
  LOG_FORMAT:
    '`json`: one JSON object per line (for log collectors); `pretty`: readable, coloured lines (pino-pretty, for development). Both are redacted the same way. pino-pretty is a development dependency: where it is not installed (production installs, the Docker image), `pretty` writes JSON lines, the first a warning (`pretty_logs_unavailable`) that says so',
  SHUTDOWN_TIMEOUT_MS:
    'how long SIGTERM waits for streams, sockets and jobs before exiting anyway; running agent runs may finish during its first three quarters (the drain), then end with `server_shutdown`',
} as const satisfies Record<EnvName, string>;

type EnvName = keyof typeof EnvSchema.shape;

/** What the schema alone cannot say: defaults computed at start, and comma-separated lists. */
const OVERRIDES: Partial<Record<EnvName, { type?: string; default?: string }>> = {
  INSTANCE_ID: { default: '`<role>-<random>`' },
  METRICS_ENABLED: { default: '`true`' },
  SANDBOX_STATE_DIR: { default: '`DATA_DIR/sandboxes`' },
  LARK_API_BASE_URL: { default: 'per channel' },
  LLM_ALLOWED_ORIGINS: { type: 'comma-separated origins', default: 'empty' },
  MCP_STDIO_ALLOWLIST: { type: 'comma-separated commands', default: 'empty' },
  GATEWAY_WEB_ORIGINS: { type: 'comma-separated origins', default: 'empty' },
  WEB_SEARCH_PROVIDERS: { type: 'comma-separated, of `tavily` `brave`' },
};

interface JsonSchemaProperty {
  type?: string;
  enum?: string[];
  format?: string;
  minimum?: number;
  maximum?: number;
  default?: unknown;
}

const BOOLEAN_ENUM = ['0', '1', 'true', 'false', ''];

function typeOf(name: string, property: JsonSchemaProperty): string {
  if (property.enum) {
    if (BOOLEAN_ENUM.every((v) => property.enum!.includes(v))) return 'boolean';
    return property.enum.map((v) => `\`${v}\``).join(' \\| ');
  }
  if (property.type === 'integer' || property.type === 'number') {
    const max = property.maximum !== undefined && property.maximum < Number.MAX_SAFE_INTEGER;
    if (property.minimum !== undefined && max) {
      return `${property.type} ${property.minimum}–${property.maximum}`;
    }
    if (property.minimum !== undefined) return `${property.type} ≥ ${property.minimum}`;
    return property.type;
  }
  if (property.format === 'uri' || name.endsWith('_URL')) return 'URL';
  return 'string';
}

function defaultOf(property: JsonSchemaProperty): string {
  if (property.enum && BOOLEAN_ENUM.every((v) => property.enum!.includes(v))) {
    return '`false`';
  }
  return property.default === undefined ? 'unset' : `\`${String(property.default)}\``;
}

/** `docs/configuration.md`, whole: every variable of every role, its type, default and meaning. */
export function renderConfigurationDoc(): string {
  const schema = z.toJSONSchema(EnvSchema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, JsonSchemaProperty>;
  };
  // In the schema's order: related variables stay together.
  const rows = (Object.keys(EnvSchema.shape) as EnvName[]).map((name) => {
    const property = schema.properties[name] ?? {};
    const override = OVERRIDES[name] ?? {};
    const type = override.type ?? typeOf(name, property);
    const fallback = override.default ?? defaultOf(property);
    return `| \`${name}\` | ${type} | ${fallback} | ${ENV_MEANINGS[name]} |`;
  });
  return [
    HEADER,
    '',
    '| variable | type | default | meaning |',
    '|---|---|---|---|',
    ...rows,
    '',
    TAIL,
    '',
  ].join('\n');
}

const HEADER = `# Configuration

Every role reads its environment once at start, validates it with the schema in
\`packages/config/src/schema.ts\`, and exits 1 listing every problem at once. Empty values count
as unset.

This page is generated from \`packages/config/src/schema.ts\` (types, defaults) and
\`packages/config/src/reference.ts\` (meanings) by \`pnpm docs:config\`; a test fails when it is
stale. Every role reads the same variables; the roles section below says which each requires.`;

const TAIL = `
Roles:

- \`all-in-one\` runs with nothing set. With only one of \`REDIS_URL\` / \`DATABASE_URL\` it uses
  that one and the embedded adapter for the other. Without JWT keys it generates a pair into
  \`DATA_DIR\` on first start and reuses it.
- \`api\`, \`gateway\`, \`worker\` refuse to start without \`REDIS_URL\` and \`DATABASE_URL\` (their
  state must be shared with the other replicas). \`api\` also needs both JWT keys, \`gateway\` the
  public key: replicas that generated their own keys would reject each other's tokens.`;
