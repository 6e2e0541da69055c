import { parseOrigin } from '@agent-backend/url-guard';
import { z } from 'zod';

/** The processes this service can run as. `all-in-one` runs the other three in one process. */
export const Role = z.enum(['all-in-one', 'api', 'gateway', 'worker']);
export type Role = z.infer<typeof Role>;

/** Default listen port; the compose file and the Dockerfiles rely on it. */
export const DEFAULT_PORT = 8000;

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));

const booleanString = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

const url = (protocols: string[]) =>
  optionalString.refine(
    (v) => {
      if (v === undefined) return true;
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    {
      message: `must be a URL with scheme ${protocols.map((p) => p.replace(':', '')).join(' or ')}`,
    },
  );

/** Like {@link booleanString}, but unset (or empty) means true. */
const booleanStringDefaultTrue = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === undefined || v === '' || v === 'true' || v === '1');

/** An operator credential: long enough not to be guessed, no whitespace (it travels in a header). */
/** An OTLP exporter protocol, as the OpenTelemetry specification spells it; empty: unset. */
const otlpProtocol = optionalString.pipe(z.enum(['http/protobuf', 'http/json', 'grpc']).optional());

const operatorToken = optionalString.refine((v) => v === undefined || /^\S{16,}$/.test(v), {
  message: 'must be at least 16 characters without spaces',
});

/** Comma-separated entries, trimmed; empty ones (`a,,b`, a trailing comma) are dropped. */
const commaList = optionalString.transform((v) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);

/** Comma-separated `host:port` entries (an IPv6 host in brackets). */
const hostPortList = commaList.refine(
  (list) => list.every((entry) => /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):\d{1,5}$/.test(entry)),
  { message: 'must be comma-separated host:port entries' },
);

/** Asymmetric JWT algorithms a provider token may use (auth's `PROVIDER_ALGORITHMS`). */
const PROVIDER_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
] as const;

/** Comma-separated origins (`http://127.0.0.1:11434`), each reported by name when it is not one. */
const originList = commaList
  .superRefine((entries, ctx) => {
    for (const entry of entries) {
      const parsed = parseOrigin(entry);
      if ('problem' in parsed)
        ctx.addIssue({ code: 'custom', message: `"${entry}" ${parsed.problem}` });
    }
  })
  .transform((entries) =>
    entries.map((entry) => {
      const parsed = parseOrigin(entry);
      return 'origin' in parsed ? parsed.origin : entry;
    }),
  );

/**
 * Every environment variable the service reads (DESIGN.md, "Environment"), with its default and,
 * in `.describe()`, its meaning for people: docs/configuration.md is generated from this.
 * Empty strings count as unset, so `FOO=` in a compose file does not become a value.
 */
/** Days a kind of data is kept by the retention sweep; `0`: forever. */
const retentionDays = (days: number) => z.coerce.number().int().min(0).max(36_500).default(days);

export const EnvSchema = z.object({
  PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(DEFAULT_PORT)
    .describe('listen port (0: any free port; the log line `listening` names it)'),
  HOST: z.string().min(1).default('0.0.0.0').describe('listen address'),
  REDIS_URL: url(['redis:', 'rediss:']).describe(
    '`redis://` or `rediss://`. Unset: in-process bus, presence and ephemeral keys',
  ),
  REDIS_MODE: z
    .enum(['standalone', 'cluster', 'sentinel'])
    .default('standalone')
    .describe(
      '`standalone`: the server of `REDIS_URL`. `cluster`: a Redis Cluster reached through `REDIS_CLUSTER_NODES` (keys of presence and of the job queues get hash tags, the bus uses sharded pub/sub). `sentinel`: the master that `REDIS_SENTINELS` name `REDIS_SENTINEL_NAME`, followed through failovers. In the last two `REDIS_URL` only carries credentials and TLS (`rediss:`); unset, it is `redis://` + the first node or sentinel',
    ),
  REDIS_CLUSTER_NODES: hostPortList.describe(
    'comma-separated `host:port` of some Redis Cluster nodes (the client discovers the rest); required with `REDIS_MODE=cluster`',
  ),
  REDIS_SENTINELS: hostPortList.describe(
    'comma-separated `host:port` of the sentinels; required with `REDIS_MODE=sentinel`',
  ),
  REDIS_SENTINEL_NAME: optionalString.describe(
    'the master name the sentinels monitor (`sentinel monitor <name> ...`); required with `REDIS_MODE=sentinel`',
  ),
  REDIS_COMMAND_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(5_000)
    .describe(
      'a Redis command of a request (including adding a job or a schedule) without a reply after this long fails (the request gets 503 `unavailable`); blocking reads and BullMQ workers are not affected',
    ),
  REDIS_KEY_PREFIX: z
    .string()
    .min(1)
    .default('ab:')
    .describe(
      'prefix of every Redis key and channel, so deployments (and tests) can share a Redis',
    ),
  DATABASE_URL: url(['postgres:', 'postgresql:']).describe(
    '`postgres://`. Unset: PGlite under `DATA_DIR/pglite`',
  ),
  DATABASE_QUERY_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5_000)
    .describe(
      'a PostgreSQL statement running longer is cancelled by the server; one whose reply does not come within 1 s more (a stalled network or server) is given up and its connection closed; waiting this long for a connection fails too. The request gets 503 `unavailable`. `0`: no limit. Migrations and the vector-search preparation at start are not limited. Raise it if single statements rightly take longer (deleting a knowledge base of millions of chunks)',
    ),
  DATABASE_SCHEMA: optionalString
    .refine((v) => v === undefined || /^[a-z_][a-z0-9_]{0,62}$/.test(v), {
      message: 'must be a lower-case SQL identifier',
    })
    .describe(
      "PostgreSQL schema for every table (created if missing); unset: the connection's default",
    ),
  MIGRATE_ON_START: booleanStringDefaultTrue.describe(
    "the api, worker and all-in-one apply pending database migrations before they listen (one at a time, under a lock). `false`: they do not, and refuse to start on a PostgreSQL schema with a pending migration; migrations are then the `migrate` command's job (`node apps/all-in-one/dist/migrate.js`, the Helm chart's pre-upgrade Job; [deployment.md](deployment.md)). The embedded PGlite database is always migrated",
  ),
  DATA_DIR: z
    .string()
    .min(1)
    .default('./.data')
    .describe("PGlite files, generated development keys, the all-in-one's control socket"),
  INSTANCE_ID: optionalString.describe("this replica's id on the bus and in presence"),
  JWT_PUBLIC_KEY: optionalString.describe(
    'RS256 public key, SPKI PEM (inline `\\n` escapes are accepted). Required for api and gateway (or `JWT_PUBLIC_KEY_FILE`)',
  ),
  JWT_PUBLIC_KEY_FILE: optionalString.describe(
    'a file holding `JWT_PUBLIC_KEY` (set one of the two)',
  ),
  JWT_PRIVATE_KEY: optionalString.describe(
    'RS256 private key, PKCS8 PEM. Required for api (or `JWT_PRIVATE_KEY_FILE`)',
  ),
  JWT_PRIVATE_KEY_FILE: optionalString.describe(
    'a file holding `JWT_PRIVATE_KEY` (set one of the two)',
  ),
  JWT_KEYS_FILE: optionalString.describe(
    'a key set file (JSON, `{ "keys": [{ kid, publicKey, privateKey, activeFrom, verifyUntil }] }`) instead of one PEM pair: every process re-reads it within 2 s of a change, signs with the newest active key and verifies each key id until its `verifyUntil`. `pnpm keys:rotate` writes it. Give every replica the same file; it wins over `JWT_PUBLIC_KEY` / `JWT_PRIVATE_KEY`. Unset in the all-in-one: `DATA_DIR/jwt-keys.json` when `keys:rotate` wrote one. See [auth.md](auth.md#rotating-the-signing-key)',
  ),
  AUTH_JWKS_URL: url(['http:', 'https:']).describe(
    "your identity provider's keys, to accept its access tokens beside the service's own: an OIDC discovery URL (`.../.well-known/openid-configuration`, whose `issuer` must equal `AUTH_ISSUER`) or its JWKS URL. Fetched on the first provider token, cached by `kid`, kept while the provider is down. Needs `AUTH_ISSUER` and `AUTH_AUDIENCE`. Unset: only the service's own tokens. See [auth-provider.md](auth-provider.md)",
  ),
  AUTH_ISSUER: optionalString.describe(
    "the `iss` of the provider's tokens, exactly. Tokens with this `iss` are checked against the provider's keys, all others as the service's own",
  ),
  AUTH_AUDIENCE: commaList.describe(
    "a provider token's `aud` must contain one of these (the identifier of this API at the provider). Required with `AUTH_JWKS_URL`",
  ),
  AUTH_ALGORITHMS: commaList
    .transform((v) => (v.length > 0 ? v : ['RS256', 'ES256']))
    .pipe(
      z.array(
        z.enum(PROVIDER_ALGORITHMS, {
          message: `each must be one of ${PROVIDER_ALGORITHMS.join(', ')}`,
        }),
      ),
    )
    .describe(
      'algorithms accepted on provider tokens, of `RS256` `RS384` `RS512` `PS256` `PS384` `PS512` `ES256` `ES384` `ES512`; `none` and HMAC (`HS*`) are refused by the schema',
    ),
  AUTH_USER_CLAIM: z
    .string()
    .min(1)
    .default('sub')
    .describe(
      'the provider token claim that holds the user id (1-128 characters; ids starting with `chat:` or `task:` are refused)',
    ),
  AUTH_CLOCK_SKEW_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(300)
    .default(30)
    .describe("leeway for provider tokens' `exp` and `nbf`, for clocks that disagree"),
  AUTH_JWKS_REFETCH_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(3_600)
    .default(30)
    .describe(
      "least time between two fetches of the provider's keys caused by a token with an unknown `kid` (a key just rotated in, or a forged one); such tokens are refused without asking the provider in between",
    ),
  AUTH_SERVICE_TOKEN: operatorToken.describe(
    "credential of the operator's login layer (server to server): `Authorization: Bearer <token>` on `POST /api/auth/token` (a token pair for a signed-in user) and `POST /api/auth/revoke-user` (revoke all of a user's tokens), compared in constant time. At least 16 characters. Unset: both endpoints are 404. Never a user's access token; see [auth.md](auth.md)",
  ),
  INTERNAL_API_SECRET: optionalString.describe(
    'secret for `POST /scheduled-task/sync`; unset: that endpoint answers 503',
  ),
  DEV_TOKENS: booleanString.describe(
    "development only: `POST /api/dev/tokens` issues a token pair for any user id (the playground's mint button, `pnpm demo`). Never in production: anyone reaching the service could act as any user",
  ),
  PLAYGROUND_DEMO_MODEL_URL: optionalString.describe(
    'set by `pnpm demo`: the scripted demo model (an OpenAI-compatible base URL) the playground offers, labelled as scripted',
  ),
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
    .describe('interval of server-side WebSocket pings; a peer that misses one is terminated'),
  NODE_SILENT_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(90_000)
    .describe('a node that sent nothing (no frame, no pong) for this long is gone from presence'),
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
  SMTP_URL: url(['smtp:', 'smtps:']).describe(
    '`smtp://` or `smtps://` (credentials in the URL) for scheduled-task email notifications; unset: email channels are logged and skipped (see [`scheduled-tasks.md`](scheduled-tasks.md))',
  ),
  EMAIL_FROM: z
    .string()
    .min(1)
    .default('Agent Backend <no-reply@localhost>')
    .describe('sender of notification emails'),
  JOBS_LOCK_MS: z.coerce
    .number()
    .int()
    .min(500)
    .default(30_000)
    .describe(
      'BullMQ job lock: a job whose worker died (or stopped renewing) is delivered again after about this long',
    ),
  JOBS_KEEP_COMPLETED_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(86_400_000)
    .describe(
      'a completed job is deleted from its queue once it is this old (checked when a later job of the queue completes); while kept, its id deduplicates adds (see [`operations.md`](operations.md#job-retention))',
    ),
  JOBS_KEEP_COMPLETED_COUNT: z.coerce
    .number()
    .int()
    .min(0)
    .default(1_000)
    .describe(
      'at most this many completed jobs are kept per queue, the newest; `0` deletes each at once',
    ),
  JOBS_KEEP_FAILED_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(7 * 86_400_000)
    .describe(
      'a job whose every attempt failed is deleted from its queue once it is this old (checked when a later job of the queue fails); kept for the queue dashboard',
    ),
  JOBS_KEEP_FAILED_COUNT: z.coerce
    .number()
    .int()
    .min(0)
    .default(5_000)
    .describe('at most this many failed jobs are kept per queue, the newest'),
  RETENTION_SESSIONS_DAYS: retentionDays(0).describe(
    'agent sessions (with their messages, runs, approvals, todo list and sandbox) whose last activity is older than this many days are deleted by the retention sweep; a session with a run going (even one waiting for an approval) or used during the sweep is kept. `0`: kept forever (see Retention in [operations.md](operations.md#retention))',
  ),
  RETENTION_TASK_RUNS_DAYS: retentionDays(90).describe(
    'finished scheduled-task runs (their occurrence records: output, error, status) older than this many days are deleted by the retention sweep; the tasks themselves stay. `0`: kept forever',
  ),
  RETENTION_KNOWLEDGE_DOCUMENTS_DAYS: retentionDays(0).describe(
    'knowledge documents untouched (not uploaded again or re-ingested) for this many days are deleted with their chunks by the retention sweep; their knowledge base stays. `0`: kept forever',
  ),
  RETENTION_MEMORIES_DAYS: retentionDays(0).describe(
    'long-term memories not saved again for this many days are deleted by the retention sweep. `0` (default): never, since users rely on what the agent remembers',
  ),
  AUDIT_LOG_RETENTION_DAYS: retentionDays(365).describe(
    'audit log events older than this many days are deleted by the retention sweep. `0`: kept forever',
  ),
  RETENTION_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(3_600_000)
    .describe(
      'how often one worker (elected per interval in the ephemeral store; the all-in-one in process) runs the retention sweep',
    ),
  RETENTION_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(500)
    .describe(
      'rows (sessions, task runs, documents, memories, audit events) each statement of the retention sweep deletes at most; a session goes with all its messages, so with long sessions a lower value spreads the work (see [BENCHMARKS.md](BENCHMARKS.md)); the sweep pauses briefly between batches',
    ),
  RUN_LOG_RETENTION_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(600_000)
    .describe(
      "how long a run's events stay in the run log after its last event, so a dropped stream can resume (`Last-Event-ID`) on any replica; the stored conversation is not affected",
    ),
  SCHEDULED_TASK_CONFIRM_TTL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(86_400_000)
    .describe(
      "how long a `require-confirmation` run waits for the user's answer before it expires",
    ),
  EMBEDDINGS_BASE_URL: url(['http:', 'https:']).describe(
    "OpenAI-compatible API root (`https://api.openai.com/v1`, a local server's `/v1`) used to embed knowledge-base chunks (worker) and search queries (api); unset: knowledge search is full-text only (see [`knowledge-base.md`](knowledge-base.md)). Operator-configured, so not behind the SSRF guard",
  ),
  EMBEDDINGS_API_KEY: optionalString.describe(
    'its key (sent as `Authorization: Bearer`); never logged',
  ),
  EMBEDDINGS_MODEL: optionalString.describe(
    'the embedding model; required with `EMBEDDINGS_BASE_URL`. Stored with every chunk: chunks are only compared with queries embedded by the same model',
  ),
  EMBEDDINGS_DIMENSIONS: z
    .preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.coerce.number().int().min(1).max(16_000).optional(),
    )
    .describe(
      "vector size to ask for (`dimensions`, for models that take it); unset: the model's own size",
    ),
  EMBEDDINGS_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(2048)
    .default(64)
    .describe('chunks per embeddings request'),
  EMBEDDINGS_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(600_000)
    .default(30_000)
    .describe(
      'deadline of one embeddings request (the client retries twice more on 408/409/429/5xx)',
    ),
  KNOWLEDGE_PGVECTOR: z
    .enum(['auto', 'off'])
    .default('auto')
    .describe(
      '`auto`: store vectors (knowledge-base chunks and memories) in pgvector `vector` columns where the extension is installed or can be created; `off`: keep `real[]` and compare in plain SQL',
    ),
  KNOWLEDGE_REEMBED: z
    .enum(['auto', 'off'])
    .default('auto')
    .describe(
      '`auto`: when a worker starts with embeddings configured, it queues the re-ingestion of every ready document without vectors of `EMBEDDINGS_MODEL` (and `EMBEDDINGS_DIMENSIONS`), e.g. after the model changed or embeddings were configured later; `off`: those documents stay searchable by their words only',
    ),
  AGENT_MAX_STEPS: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .default(25)
    .describe(
      'model requests per agent run (1-200) before it ends with `max_steps_exceeded`; every kind of run (invoke, scheduled, chat)',
    ),
  AGENT_LLM_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60_000)
    .describe('time to the response headers of one model request, per attempt'),
  AGENT_LLM_MAX_RETRIES: z.coerce
    .number()
    .int()
    .min(0)
    .max(5)
    .default(1)
    .describe('retries (0-5) of a model request on 408/409/429/5xx and connection errors'),
  AGENT_LLM_IDLE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1)
    .default(60_000)
    .describe('longest silence inside a streamed model answer before `llm_timeout`'),
  AGENT_KEEPALIVE_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(15_000)
    .describe('an SSE `: keepalive` comment after this long without a write (api)'),
  AGENT_SSE_STALL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe(
      'an SSE stream whose client took no bytes for this long (it stopped reading) is ended; the client resumes with Last-Event-ID (api)',
    ),
  AGENT_DISCONNECT_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      'how long a run outlives its last SSE client before it is aborted (0: at once); a run waiting for approvals then suspends instead',
    ),
  AGENT_SUSPEND_AFTER_MS: z
    .preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.coerce.number().int().min(0).optional(),
    )
    .describe(
      "a run waiting this long for approvals suspends even while its client listens: the stream ends with the `suspended` event and the run is stored until a decision or the timeout resumes it (see [`hitl.md`](hitl.md#suspended-runs)); set it only when your clients know `suspended`. Unset: a listening client's stream stays open until the decision or the timeout, as before (runs whose client left, background runs and runs on a draining replica suspend in any case)",
    ),
  AGENT_TAKEOVER: booleanStringDefaultTrue.describe(
    'a run whose replica died (SIGKILL, OOM, lost node; its session lease expired) is taken over by a worker from its last stored step: completed model turns and tool calls are not repeated, a call in flight runs again only when its tool is safe to repeat and is otherwise reported to the model as interrupted. `false`: such runs end with `run_lost`, as before',
  ),
  AGENT_TAKEOVER_CHECK_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe(
      'how often each worker looks for runs whose replica died (their lease expired) to take them over (with `AGENT_TAKEOVER`)',
    ),
  AGENT_RUN_JOBS_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(50)
    .describe(
      'agent runs one worker executes at once from the `agent-runs` queue: background runs, suspended runs resumed, runs taken over (worker)',
    ),
  AGENT_SESSION_LEASE_MS: z.coerce
    .number()
    .int()
    .min(300)
    .default(30_000)
    .describe(
      "session lease lifetime, renewed every third of it while the run lives; a crashed replica's session frees after about this long",
    ),
  AGENT_MAX_PARALLEL_TOOLS: z.coerce
    .number()
    .int()
    .min(1)
    .max(64)
    .default(8)
    .describe(
      "tool calls of one model turn executing at the same time (1-64); each node's `max_concurrent_tasks` also bounds a run's calls to that node; `1` runs the calls one after the other in the model's order, as before; every kind of run",
    ),
  AGENT_MAX_TOOLS: z.coerce
    .number()
    .int()
    .min(8)
    .max(1_024)
    .default(128)
    .describe(
      "tools one run offers the model in all, built-in ones included (OpenAI's API accepts 128 per request); over it, the user's device tools are left out first (the last devices' last tools), then other sources' from the last source, and the run starts with a `tools_limited` notice (see [`agent.md`](agent.md#tools-of-a-run))",
    ),
  AGENT_MAX_TOOL_NODES: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_024)
    .default(32)
    .describe(
      "a user's devices (nodes) whose tools one run offers, the longest connected first; the others' tools are not offered (`tools_limited` notice)",
    ),
  SKILLS_DIR: optionalString.describe(
    "the operator's skills: a folder of skill folders, each with a `SKILL.md`, offered to every user next to the shipped `skills/`; a skill here replaces a shipped one of the same name. Invalid skills are logged at start and left out (see [`skills.md`](skills.md))",
  ),
  SANDBOX_LOCAL_ROOT: optionalString.describe(
    "enables `sandbox_mode: local` (bubblewrap, [`sandbox.md`](sandbox.md)): each user's `working_directory` must resolve, after symlinks, inside `<root>/<user id>` (the id as one path segment; a relative `working_directory` starts there). Unset: local runs get no code tools and a `notice`",
  ),
  SANDBOX_STATE_DIR: optionalString.describe(
    "local sandboxes' own state (a private `/tmp` each, metadata); replicas on one host share it so any of them reconnects to a session's sandbox",
  ),
  SANDBOX_LOCAL_NETWORK: booleanString.describe(
    "give local sandboxes the host's network (off: a network namespace with nothing in it; Docker: network `none`, on: `bridge`)",
  ),
  SANDBOX_LOCAL_RUNTIME: z
    .enum(['bwrap', 'docker'])
    .default('bwrap')
    .describe(
      "what runs local sandboxes: `bwrap` (bubblewrap, no daemon) or `docker` (a container per session through the Docker Engine API; Podman's compatible API works too) ([`sandbox.md`](sandbox.md#local-docker))",
    ),
  DOCKER_HOST: z
    .string()
    .regex(/^(unix|tcp):\/\//, 'unix:///path or tcp://host:port')
    .default('unix:///var/run/docker.sock')
    .describe('the engine of `SANDBOX_LOCAL_RUNTIME=docker`: `unix:///path` or `tcp://host:port`'),
  SANDBOX_DOCKER_IMAGE: z
    .string()
    .min(1)
    .default('agent-backend-sandbox')
    .describe(
      'the image sandbox containers run; it needs bash, coreutils (`timeout`), python3 (with matplotlib for figures) and node: `infra/sandbox.Dockerfile` builds one',
    ),
  SANDBOX_DOCKER_USER: optionalString.describe(
    "`uid:gid` code runs as in containers; unset: the service's own (so files it writes in the working directory are the service's)",
  ),
  SANDBOX_CALL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(60_000)
    .describe(
      'deadline of one `execute_code` / `run_command` call; past it the call is killed with everything it started and the tool answers an error',
    ),
  SANDBOX_MAX_OUTPUT_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(10_485_760)
    .default(65_536)
    .describe(
      'stdout and stderr of one call are each cut here (marked in the result); also the most `read_file` reads',
    ),
  SANDBOX_IDLE_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(600_000)
    .describe(
      "a session's sandbox unused this long is paused by the worker's sweep (bubblewrap: nothing runs between calls, so there is nothing to stop; Docker: the container is stopped, killing what runs in it, and a container also stops itself after this long without a call when no worker runs; E2B: paused)",
    ),
  SANDBOX_MAX_IDLE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(86_400_000)
    .describe(
      "a session's sandbox unused this long is destroyed with its `/tmp` (the user's working directory stays)",
    ),
  SANDBOX_SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(60_000)
    .describe(
      'how often one worker (elected per interval in the ephemeral store) pauses, destroys and reaps sandboxes',
    ),
  SANDBOX_CREATE_LEASE_MS: z.coerce
    .number()
    .int()
    .min(500)
    .default(60_000)
    .describe(
      "how long one replica may take to create a session's sandbox before another may; sandboxes no session records are reaped once twice this old",
    ),
  ERASURE_BATCH_SIZE: z.coerce
    .number()
    .int()
    .min(1)
    .max(10_000)
    .default(500)
    .describe(
      "rows (or sessions, with their messages, runs and approvals) a user's erasure removes per transaction: a bound on the locks one batch holds",
    ),
  ERASURE_LEASE_MS: z.coerce
    .number()
    .int()
    .min(500)
    .default(30_000)
    .describe(
      "how long a user's erasure in progress is left to its process (renewed with every batch); past it, a worker finishes it (the process died). Workers look for such erasures every half of it",
    ),
  SANDBOX_DEPLOYMENT: z
    .string()
    .min(1)
    .default('agent-backend')
    .describe(
      "label in every sandbox's metadata; the sweep only reaps its own deployment's sandboxes",
    ),
  SANDBOX_CLOUD_PROVIDER: z
    .enum(['e2b'])
    .optional()
    .describe(
      '`e2b`: `cloud` runs (also runs without a `sandbox_mode`) run code in E2B sandboxes ([`sandbox.md`](sandbox.md#cloud-e2b)); needs `E2B_API_KEY`. Unset: runs that ask for `cloud` get no code tools and a `notice`; runs without a `sandbox_mode` get no code tools',
    ),
  E2B_API_KEY: optionalString.describe(
    "E2B's API key (sent as `X-API-KEY`); required with `SANDBOX_CLOUD_PROVIDER=e2b`",
  ),
  E2B_TEMPLATE: z
    .string()
    .min(1)
    .default('code-interpreter-v1')
    .describe(
      'the E2B template sandboxes start from; it needs `python3` (with matplotlib for figures), `node` and `bash`',
    ),
  E2B_API_URL: optionalString
    .pipe(z.string().url().optional())
    .describe(
      "E2B's control API (self-hosted E2B, tests); unset: the SDK's, `https://api.<E2B_DOMAIN>`",
    ),
  E2B_SANDBOX_URL: optionalString
    .pipe(z.string().url().optional())
    .describe("one origin for every sandbox's envd (E2B's sandbox proxy); unset: the SDK's"),
  E2B_DOMAIN: optionalString.describe(
    "E2B's domain (regional or self-hosted E2B); unset: `e2b.app`",
  ),
  E2B_SANDBOX_LIFETIME_MS: z.coerce
    .number()
    .int()
    .min(60_000)
    .max(86_400_000)
    .default(3_600_000)
    .describe(
      'E2B pauses a sandbox this long after it was created or last reconnected (each run reconnects): a safety net under the idle sweep for when no worker runs',
    ),
  TAVILY_API_KEY: optionalString.describe(
    "Tavily's key for `web_search` ([`web-search.md`](web-search.md)); unset: Tavily is not used",
  ),
  TAVILY_API_BASE_URL: z
    .string()
    .url()
    .default('https://api.tavily.com')
    .describe("Tavily's origin"),
  BRAVE_SEARCH_API_KEY: optionalString.describe(
    "Brave Search's key (`X-Subscription-Token`); unset: Brave is not used",
  ),
  BRAVE_SEARCH_API_BASE_URL: z
    .string()
    .url()
    .default('https://api.search.brave.com')
    .describe("Brave Search's origin"),
  WEB_SEARCH_PROVIDERS: z
    .string()
    .default('tavily,brave')
    .transform((value) =>
      value
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(['tavily', 'brave'])).min(1))
    .describe(
      'the order providers are tried in (those with a key). No provider: `enable_web_search` runs get no tool and a `notice`',
    ),
  WEB_SEARCH_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(60_000)
    .default(8_000)
    .describe('deadline of one provider call; past it the next provider is tried'),
  WEB_SEARCH_CACHE_TTL_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(300_000)
    .describe("how long a query's results are reused, in the ephemeral store (0: no cache)"),
  WEB_SEARCH_BREAKER_FAILURES: z.coerce
    .number()
    .int()
    .min(1)
    .default(3)
    .describe('consecutive failures after which a provider is skipped'),
  WEB_SEARCH_BREAKER_COOLDOWN_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe('how long a failing provider is skipped before one probe'),
  GITHUB_API_BASE_URL: z
    .string()
    .url()
    .default('https://api.github.com')
    .describe("GitHub's API origin for the SaaS account tools ([`saas-tools.md`](saas-tools.md))"),
  GITHUB_OAUTH_TOKEN_URL: z
    .string()
    .url()
    .default('https://github.com/login/oauth/access_token')
    .describe("GitHub's token endpoint, where expired tokens are refreshed"),
  GITHUB_CLIENT_ID: optionalString.describe(
    "the operator's OAuth client for GitHub; without it, that provider's expired tokens become a tool error asking the user to reconnect",
  ),
  GITHUB_CLIENT_SECRET: optionalString.describe('its client secret'),
  GMAIL_API_BASE_URL: z
    .string()
    .url()
    .default('https://gmail.googleapis.com')
    .describe("Gmail's API origin"),
  GOOGLE_DRIVE_API_BASE_URL: z
    .string()
    .url()
    .default('https://www.googleapis.com')
    .describe("Google Drive's API origin"),
  GOOGLE_OAUTH_TOKEN_URL: z
    .string()
    .url()
    .default('https://oauth2.googleapis.com/token')
    .describe("Google's token endpoint (Gmail and Drive share it)"),
  GOOGLE_CLIENT_ID: optionalString.describe(
    "the operator's OAuth client for Google (Gmail and Drive); without it, that provider's expired tokens become a tool error asking the user to reconnect",
  ),
  GOOGLE_CLIENT_SECRET: optionalString.describe('its client secret'),
  SLACK_API_BASE_URL: z
    .string()
    .url()
    .default('https://slack.com/api')
    .describe("Slack's Web API origin"),
  SLACK_OAUTH_TOKEN_URL: z
    .string()
    .url()
    .default('https://slack.com/api/oauth.v2.access')
    .describe("Slack's token endpoint"),
  SLACK_CLIENT_ID: optionalString.describe(
    "the operator's OAuth client for Slack; without it, that provider's expired tokens become a tool error asking the user to reconnect",
  ),
  SLACK_CLIENT_SECRET: optionalString.describe('its client secret'),
  NOTION_API_BASE_URL: z
    .string()
    .url()
    .default('https://api.notion.com')
    .describe("Notion's API origin"),
  NOTION_OAUTH_TOKEN_URL: z
    .string()
    .url()
    .default('https://api.notion.com/v1/oauth/token')
    .describe("Notion's token endpoint"),
  NOTION_CLIENT_ID: optionalString.describe(
    "the operator's OAuth client for Notion; without it, that provider's expired tokens become a tool error asking the user to reconnect",
  ),
  NOTION_CLIENT_SECRET: optionalString.describe('its client secret'),
  SAAS_CALL_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(300_000)
    .default(30_000)
    .describe('whole deadline of one SaaS tool call, refresh and retry included'),
  SAAS_MAX_RETRY_AFTER_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(60_000)
    .default(10_000)
    .describe(
      "a rate-limited SaaS call (429, GitHub's 403 with `x-ratelimit-remaining: 0`, ...) is retried once when the wait it asks for (`Retry-After`, `x-ratelimit-reset`, 1 s) is at most this and fits the deadline",
    ),
  RATE_LIMIT_INVOKE_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(20)
    .describe(
      'agent runs (`POST /api/agent/invoke`) one user may start a minute, counted for the whole deployment; over it 429 `rate_limited` with `Retry-After` ([limits.md](limits.md)); `0`: off',
    ),
  RATE_LIMIT_DECISIONS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(60)
    .describe('approval decisions one user may send a minute; `0`: off'),
  RATE_LIMIT_KNOWLEDGE_UPLOAD_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(20)
    .describe('knowledge documents one user may upload a minute; `0`: off'),
  RATE_LIMIT_KNOWLEDGE_SEARCH_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(60)
    .describe('knowledge searches one user may run a minute; `0`: off'),
  RATE_LIMIT_MCP_VALIDATE_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(10)
    .describe('MCP server validations one user may start a minute; `0`: off'),
  RATE_LIMIT_WRITES_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(60)
    .describe('memory and skill writes one user may make a minute; `0`: off'),
  RATE_LIMIT_NODE_TOOL_CALLS_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(60)
    .describe('node tool calls over HTTP one user may make a minute; `0`: off'),
  CHAT_MESSAGES_PER_CHAT_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(10)
    .describe(
      'chat-platform messages of one chat answered by an agent run a minute; more are acknowledged and answered with a short notice instead of a run ([limits.md](limits.md)); `0`: off',
    ),
  CHAT_MESSAGES_PER_PLATFORM_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .default(600)
    .describe(
      'chat-platform messages of one platform (all chats together) answered by a run a minute; more get the same notice; `0`: off',
    ),
  MAX_CONCURRENT_RUNS_PER_USER: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(4)
    .describe(
      'agent runs one user may have going at once across all replicas; another invoke gets 429 `rate_limited` before any model request; `0`: no limit',
    ),
  RUN_SLOT_LEASE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(600_000)
    .default(30_000)
    .describe(
      "a run slot is renewed by its replica every third of this; a crashed replica's slots are free again within it",
    ),
  LIMITS_ON_REDIS_ERROR: z
    .enum(['open', 'closed'])
    .default('open')
    .describe(
      '`open` (default): while Redis cannot be reached the limits let requests through unchecked (logged); `closed`: requests under a limit get 429 `rate_limited` (`details.reason: "limits_unavailable"`) with `Retry-After: 5`. Never a 5xx',
    ),
  MAX_OPEN_STREAMS_PER_USER: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(8)
    .describe(
      'agent SSE streams (invoke and resumed streams) one user may have open at once across all replicas; another gets 429 `rate_limited` before any model request ([limits.md](limits.md)); `0`: no limit',
    ),
  TOKEN_BUDGET_PER_USER_PER_DAY: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000_000_000)
    .default(0)
    .describe(
      "model tokens (prompt plus completion, as the providers report them) one user's runs may use in a UTC day, counted for the whole deployment; at it an invoke gets 429 `budget_exceeded`, and a run that crosses it ends after its current model request with the `error` event `budget_exceeded` ([limits.md](limits.md)); `0`: off",
    ),
  MAX_NODE_CONNECTIONS_PER_USER: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(10)
    .describe(
      'WebSocket connections of nodes (`/ws/extension`, `/ws/desktop`) one user may have open at once across all gateways; another is closed with 1008 `too many connections` ([limits.md](limits.md)); `0`: no limit',
    ),
  MAX_WEB_CONNECTIONS_PER_USER: z.coerce
    .number()
    .int()
    .min(0)
    .max(10_000)
    .default(20)
    .describe(
      'WebSocket connections of web clients (`/ws/web`) one user may have open at once across all gateways; another is closed with 1008; `0`: no limit',
    ),
  RATE_LIMIT_REFRESH_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(100_000)
    .default(30)
    .describe(
      'token refreshes (`POST /api/auth/refresh`) one client address may make a minute (see `TRUST_PROXY`); `0`: off',
    ),
  RATE_LIMIT_WEBHOOK_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(1_000_000)
    .default(1200)
    .describe(
      'chat-platform webhook requests one client address may send a minute (the platforms send from few addresses: size it above their total message rate); `0`: off',
    ),
  TRUST_PROXY: optionalString
    .pipe(z.union([z.enum(['true', 'false']), z.string().regex(/^\d{1,2}$/)]).optional())
    .transform((v) => (v === undefined || v === 'false' ? 0 : v === 'true' ? 1 : Number(v)))
    .describe(
      "whether `X-Forwarded-For` is believed for the client address (the key of the per-address limits, and logs): `false` (default), the address is the TCP peer's; `true`, one proxy in front, the address it appended (the last entry); a number `n`, that many proxies, the `n`th entry from the end. Set it only behind proxies that append to the header, or any client can name any address",
    ),
  METRICS_ENABLED: booleanStringDefaultTrue.describe(
    '`GET /metrics` in the Prometheus text format on every role ([operations.md](operations.md)); `false`: that path is 404 and nothing is measured',
  ),
  BUILD_COMMIT: optionalString.describe(
    'the commit the running code was built from: the `commit` label of `agent_backend_build_info` ([operations.md](operations.md)). The image sets it (`docker build --build-arg BUILD_COMMIT=$(git rev-parse HEAD)`); unset: `unknown`',
  ),
  METRICS_PORT: z.coerce
    .number()
    .int()
    .min(1)
    .max(65535)
    .optional()
    .describe(
      "serve `GET /metrics` (and only it, with `METRICS_TOKEN` if set) on this port of `HOST` too, so a scraper reaches it without the public port's route; the public port keeps serving it. Unset: the public port only. Must differ from `PORT`",
    ),
  METRICS_TOKEN: operatorToken.describe(
    'when set, `GET /metrics` requires `Authorization: Bearer <token>` (401 otherwise; compared in constant time). At least 16 characters. Unset: open, so keep the port off the internet or set it',
  ),
  ADMIN_TOKEN: operatorToken.describe(
    "operator credential of the operator API at `/api/operator/` (`Authorization: Bearer <token>`; see Operator API in [operations.md](operations.md#operator-api)) and of the queue dashboard at `/admin/queues` (api role and all-in-one, BullMQ engine only; also HTTP Basic with any user name and the token as password, which a browser asks for). At least 16 characters. Unset: both are 404. Never a user's access token",
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']).describe(
    "base URL of an OpenTelemetry collector speaking OTLP; over HTTP spans go to `<url>/v1/traces`. Set: traces are on (see Traces in [operations.md](operations.md)); unset: off, and the OpenTelemetry SDK is not even loaded. The SDK's other standard variables (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_RESOURCE_ATTRIBUTES`, ...) apply too",
  ),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol.describe(
    "`http/protobuf` (unset: the OpenTelemetry default), `http/json`, or `grpc` (the endpoint is then the collector's gRPC port, e.g. `http://otel-collector:4317`)",
  ),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol.describe(
    'the same for traces only; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`',
  ),
  OTEL_SERVICE_NAME: optionalString.describe(
    "the traces' `service.name`; unset: `agent-backend-<role>` (`agent-backend-api`, ...)",
  ),
  OTEL_BSP_SCHEDULE_DELAY: z.coerce
    .number()
    .int()
    .min(1)
    .default(5_000)
    .describe('milliseconds finished spans wait to be exported in one batch'),
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on')
    .describe(
      "which traces are recorded and exported, as the OpenTelemetry specification names them: `parentbased_*` follow the caller's decision (the `traceparent` sampled flag, the bus envelope's, the scheduling request's) and apply the rest of the name to traces that start here; `traceidratio` keeps that fraction of trace ids. A trace not sampled costs a span id and a context switch per span, and is not exported. Log lines carry its `trace_id` all the same (see Traces in [operations.md](operations.md))",
    ),
  OTEL_TRACES_SAMPLER_ARG: z
    .preprocess(
      (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
      z.coerce.number().min(0).max(1).default(1),
    )
    .describe(
      'the fraction of traces the `traceidratio` samplers keep, e.g. `0.1`; ignored by the other samplers',
    ),
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`'),
  LOG_FORMAT: z
    .enum(['json', 'pretty'])
    .default('json')
    .describe(
      '`json`: one JSON object per line (for log collectors); `pretty`: readable, coloured lines (pino-pretty, for development). Both are redacted the same way. pino-pretty is a development dependency: where it is not installed (production installs, the Docker image), `pretty` writes JSON lines, the first a warning (`pretty_logs_unavailable`) that says so',
    ),
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(10_000)
    .describe(
      'how long SIGTERM waits for streams, sockets and jobs before exiting anyway; running agent runs may finish during its first three quarters (the drain), then end with `server_shutdown`',
    ),
});

export type Env = z.output<typeof EnvSchema>;
