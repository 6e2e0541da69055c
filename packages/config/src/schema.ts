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

/** Comma-separated origins (`http://127.0.0.1:11434`), each reported by name when it is not one. */
const originList = optionalString
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
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
 * Every environment variable the service reads (DESIGN.md, "Environment"), with its default.
 * Empty strings count as unset, so `FOO=` in a compose file does not become a value.
 */
export const EnvSchema = z.object({
  /** Listen port. */
  PORT: z.coerce.number().int().min(0).max(65535).default(DEFAULT_PORT),
  /** Listen address. */
  HOST: z.string().min(1).default('0.0.0.0'),
  /** Redis; unset means the in-process engine. */
  REDIS_URL: url(['redis:', 'rediss:']),
  /**
   * A Redis command of a request (presence, ephemeral keys, run log, bus publishes, adding a
   * job or a schedule) that has no reply after this long fails, so requests answer (503
   * `unavailable`) while Redis is unreachable instead of waiting for it. Blocking reads and
   * BullMQ's workers are not affected.
   */
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /** Prefix of every Redis key and channel, so several deployments (or tests) can share a Redis. */
  REDIS_KEY_PREFIX: z.string().min(1).default('ab:'),
  /** PostgreSQL; unset means PGlite under DATA_DIR. */
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  /**
   * A PostgreSQL statement that runs longer than this is cancelled by the server, and one whose
   * reply does not come within a second more (a stalled network) is given up and its connection
   * closed, so requests answer (503 `unavailable`) instead of waiting; so does waiting this long
   * for a connection. 0: no limit. Migrations are not limited.
   */
  DATABASE_QUERY_TIMEOUT_MS: z.coerce.number().int().min(0).default(5_000),
  /** PostgreSQL schema for all tables; unset means the connection's default (`public`). */
  DATABASE_SCHEMA: optionalString.refine(
    (v) => v === undefined || /^[a-z_][a-z0-9_]{0,62}$/.test(v),
    {
      message: 'must be a lower-case SQL identifier',
    },
  ),
  /** Local data: PGlite files, generated development keys. */
  DATA_DIR: z.string().min(1).default('./.data'),
  /** This replica's id on the bus; random at start when unset. */
  INSTANCE_ID: optionalString,
  /** RS256 public key, PEM. */
  JWT_PUBLIC_KEY: optionalString,
  JWT_PUBLIC_KEY_FILE: optionalString,
  /** RS256 private key, PEM. */
  JWT_PRIVATE_KEY: optionalString,
  JWT_PRIVATE_KEY_FILE: optionalString,
  /** Secret for `POST /scheduled-task/sync`; unset: that endpoint answers 503. */
  INTERNAL_API_SECRET: optionalString,
  /**
   * Development only: `POST /api/dev/tokens` issues a token pair for any user id (the
   * playground's "mint a token", `pnpm demo`). Never in production: anyone reaching the service
   * could act as any user.
   */
  DEV_TOKENS: booleanString,
  /** Set by `pnpm demo`: the scripted demo model the playground offers (an OpenAI-compatible URL). */
  PLAYGROUND_DEMO_MODEL_URL: optionalString,
  /** Model for runs without an `llm_config` of their own (scheduled tasks, chat messages). */
  DEFAULT_LLM_BASE_URL: url(['http:', 'https:']),
  DEFAULT_LLM_API_KEY: optionalString,
  DEFAULT_LLM_MODEL: optionalString,
  /** Lets MCP and other user-supplied URLs reach loopback and private addresses. */
  MCP_ALLOW_PRIVATE_NETWORKS: booleanString,
  /**
   * Model servers a user's `llm_config.baseUrl` may reach although they are on loopback or a
   * private network (Ollama, LM Studio, vLLM on the host): comma-separated origins such as
   * `http://127.0.0.1:11434`. Opens exactly those origins for model requests and nothing for
   * MCP URLs; cloud metadata addresses are rejected here.
   */
  LLM_ALLOWED_ORIGINS: originList,
  /** Commands the `stdio` MCP transport may start, comma-separated; empty refuses stdio. */
  MCP_STDIO_ALLOWLIST: optionalString.transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
  /** Deadline of one `POST /api/tools/mcp/validate`: connect, handshake and every listing page. */
  MCP_VALIDATE_TIMEOUT_MS: z.coerce.number().int().min(1).max(300_000).default(15_000),
  /** Chat-platform app credentials; unset: events are processed but no reply is sent. */
  LARK_APP_ID: optionalString,
  LARK_APP_SECRET: optionalString,
  /** Chat-platform event verification; unset: not checked. */
  LARK_VERIFICATION_TOKEN: optionalString,
  LARK_ENCRYPT_KEY: optionalString,
  /** The chat platform's API origin; unset: the platform's public origin per channel. */
  LARK_API_BASE_URL: url(['http:', 'https:']),
  /** Origins allowed to open `/ws/web`, comma-separated; empty allows any origin. */
  GATEWAY_WEB_ORIGINS: optionalString.transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ),
  /** Legacy clients that cannot send tokens: accept WebSockets without one (never in production). */
  GATEWAY_ALLOW_UNAUTHENTICATED: booleanString,
  /** Tools one node may register; a `register` with more is refused (`too_many_tools`). */
  GATEWAY_MAX_TOOLS_PER_NODE: z.coerce.number().int().min(1).max(1_024).default(128),
  /** Largest WebSocket frame accepted; a larger one closes the connection with 1009. */
  GATEWAY_MAX_FRAME_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  /**
   * Frames a second one WebSocket connection may send (a token bucket holding one second's
   * worth); over it a frame is dropped with an `error` `rate_limited`, and a connection far over
   * it for long is closed with 1008. 0: not counted.
   */
  GATEWAY_FRAMES_PER_SECOND: z.coerce.number().int().min(0).max(100_000).default(50),
  /** Bytes a second one WebSocket connection may send (the same bucket, by bytes). 0: not counted. */
  GATEWAY_BYTES_PER_SECOND: z.coerce
    .number()
    .int()
    .min(0)
    .default(1024 * 1024),
  /** Unsent bytes a client may let pile up before it is closed as a slow consumer (4008). */
  GATEWAY_MAX_BUFFERED_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024),
  /** Interval of server-side WebSocket pings; a peer that misses one is terminated. */
  GATEWAY_PING_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
  /** A node that sent nothing (no frame, no pong) for this long is gone from presence. */
  NODE_SILENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(90_000),
  /** A gateway replica that stopped heartbeating for this long is dead, and so are its nodes. */
  GATEWAY_REPLICA_TTL_MS: z.coerce.number().int().min(300).default(10_000),
  /** Default deadline of a tool call to a node (spec 8: 60 s); callers may pass their own. */
  TOOL_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).default(60_000),
  /** Deadline of a workflow run on an extension (spec 8: 300 s). */
  WORKFLOW_TIMEOUT_MS: z.coerce.number().int().min(100).default(300_000),
  /** Outgoing mail for scheduled-task notifications (`smtp://user:pass@host:port`); unset: no email. */
  SMTP_URL: url(['smtp:', 'smtps:']),
  /** Sender of notification emails. */
  EMAIL_FROM: z.string().min(1).default('Agent Backend <no-reply@localhost>'),
  /** A job whose worker stops renewing its lock for this long is delivered again (BullMQ). */
  JOBS_LOCK_MS: z.coerce.number().int().min(500).default(30_000),
  /** Completed jobs are kept this long per queue (their ids deduplicate adds meanwhile). */
  JOBS_KEEP_COMPLETED_MS: z.coerce.number().int().min(1_000).default(86_400_000),
  /** At most this many completed jobs are kept per queue (the newest). */
  JOBS_KEEP_COMPLETED_COUNT: z.coerce.number().int().min(0).default(1_000),
  /** Failed jobs (every attempt failed) are kept this long per queue, for inspection. */
  JOBS_KEEP_FAILED_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(7 * 86_400_000),
  /** At most this many failed jobs are kept per queue (the newest). */
  JOBS_KEEP_FAILED_COUNT: z.coerce.number().int().min(0).default(5_000),
  /** How long a scheduled run waits for the user's confirmation before it expires. */
  SCHEDULED_TASK_CONFIRM_TTL_MS: z.coerce.number().int().min(1_000).default(86_400_000),
  /**
   * OpenAI-compatible embeddings endpoint for knowledge bases (`.../v1`); unset: knowledge
   * search is lexical only (docs/knowledge-base.md).
   */
  EMBEDDINGS_BASE_URL: url(['http:', 'https:']),
  EMBEDDINGS_API_KEY: optionalString,
  /** The embedding model; required with EMBEDDINGS_BASE_URL. */
  EMBEDDINGS_MODEL: optionalString,
  /** Vector size to ask for (models that take `dimensions`); unset: the model's own. */
  EMBEDDINGS_DIMENSIONS: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z.coerce.number().int().min(1).max(16_000).optional(),
  ),
  /** Texts sent in one embeddings request. */
  EMBEDDINGS_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).default(64),
  /** Deadline of one embeddings request (the client retries twice more on 429/5xx). */
  EMBEDDINGS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  /**
   * `auto`: use pgvector where the database has it or can create it; `off`: never (vectors are
   * compared with plain SQL). docs/knowledge-base.md.
   */
  KNOWLEDGE_PGVECTOR: z.enum(['auto', 'off']).default('auto'),
  /**
   * `auto`: at start, a worker queues the re-ingestion of every ready document that has no
   * vectors of the configured model and size (the model changed, or embeddings were configured
   * later); `off`: such documents stay searchable by their words only. docs/knowledge-base.md.
   */
  KNOWLEDGE_REEMBED: z.enum(['auto', 'off']).default('auto'),
  /** Model requests per agent run before it ends with `max_steps_exceeded` (docs/agent.md). */
  AGENT_MAX_STEPS: z.coerce.number().int().min(1).max(200).default(25),
  /** Time to the response headers of one model request, per attempt. */
  AGENT_LLM_TIMEOUT_MS: z.coerce.number().int().min(1).default(60_000),
  /** Retries of a model request on 408/409/429/5xx and connection errors. */
  AGENT_LLM_MAX_RETRIES: z.coerce.number().int().min(0).max(5).default(1),
  /** Longest silence inside a streamed model answer before `llm_timeout`. */
  AGENT_LLM_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1).default(60_000),
  /** An SSE `: keepalive` comment after this long without a write. */
  AGENT_KEEPALIVE_MS: z.coerce.number().int().min(100).default(15_000),
  /**
   * An SSE client that takes no bytes of its stream for this long (its socket buffers full: it
   * stopped reading) has the stream ended; it resumes with Last-Event-ID. Bounds how long a stuck
   * client holds its connection and unsent bytes (docs/RELIABILITY.md).
   */
  AGENT_SSE_STALL_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /** How long a run outlives its last client before it is aborted (0: at once). */
  AGENT_DISCONNECT_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /** Session lease lifetime (renewed every third of it while the run lives). */
  AGENT_SESSION_LEASE_MS: z.coerce.number().int().min(300).default(30_000),
  /**
   * Tool calls of one model turn executing at the same time (1-64); 1 runs them one after the
   * other, in the model's order (docs/agent.md, "The loop").
   */
  AGENT_MAX_PARALLEL_TOOLS: z.coerce.number().int().min(1).max(64).default(8),
  /**
   * Tools one run offers the model, in all (OpenAI accepts 128 per request); over it, node tools
   * are left out first (docs/agent.md, "Tools of a run").
   */
  AGENT_MAX_TOOLS: z.coerce.number().int().min(8).max(1_024).default(128),
  /** A user's nodes whose tools one run offers (the longest connected first). */
  AGENT_MAX_TOOL_NODES: z.coerce.number().int().min(1).max(1_024).default(32),
  /**
   * The operator's skills: a folder of skill folders (each with a SKILL.md), shared by every
   * user; unset: only the shipped skills and users' own. docs/skills.md.
   */
  SKILLS_DIR: optionalString,
  /**
   * Code execution (docs/sandbox.md). `local` runs use bubblewrap; their
   * `working_directory` must resolve inside `SANDBOX_LOCAL_ROOT/<user id>`; unset: `local` runs
   * get no sandbox (a `notice` says why).
   */
  SANDBOX_LOCAL_ROOT: optionalString,
  /** Local sandboxes' own state (private /tmp, metadata); shared by replicas of one host. */
  SANDBOX_STATE_DIR: optionalString,
  /** Give local sandboxes the host's network. */
  SANDBOX_LOCAL_NETWORK: booleanString,
  /** What runs local sandboxes: `bwrap` (bubblewrap, no daemon) or `docker` (the Engine API). */
  SANDBOX_LOCAL_RUNTIME: z.enum(['bwrap', 'docker']).default('bwrap'),
  /** The Docker (or Podman) engine of `SANDBOX_LOCAL_RUNTIME=docker`. */
  DOCKER_HOST: z
    .string()
    .regex(/^(unix|tcp):\/\//, 'unix:///path or tcp://host:port')
    .default('unix:///var/run/docker.sock'),
  /** The image local sandbox containers run (bash, coreutils, python3 with matplotlib, node). */
  SANDBOX_DOCKER_IMAGE: z.string().min(1).default('agent-backend-sandbox'),
  /** `uid:gid` code runs as in containers; unset: the service's own. */
  SANDBOX_DOCKER_USER: optionalString,
  /** Deadline of one code call. */
  SANDBOX_CALL_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /** stdout and stderr of one call are each cut at this many bytes. */
  SANDBOX_MAX_OUTPUT_BYTES: z.coerce.number().int().min(1_024).max(10_485_760).default(65_536),
  /**
   * A session's sandbox idle this long is paused by the sweep; Docker containers also stop
   * themselves after this long without a call (for when no worker runs).
   */
  SANDBOX_IDLE_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(600_000),
  /** A session's sandbox idle this long is destroyed (its files in `/tmp` with it). */
  SANDBOX_MAX_IDLE_MS: z.coerce.number().int().min(1_000).default(86_400_000),
  /** How often a worker sweeps sandboxes (pause idle ones, destroy old and orphaned ones). */
  SANDBOX_SWEEP_INTERVAL_MS: z.coerce.number().int().min(1_000).default(60_000),
  /**
   * How long one replica may take to create a session's sandbox before another may; sandboxes
   * no session records are destroyed once twice this old.
   */
  SANDBOX_CREATE_LEASE_MS: z.coerce.number().int().min(500).default(60_000),
  /** Names this deployment's sandboxes (metadata), so a reaper leaves other deployments' alone. */
  SANDBOX_DEPLOYMENT: z.string().min(1).default('agent-backend'),
  /**
   * The provider of `cloud` sandboxes: `e2b` (needs `E2B_API_KEY`); unset: `cloud` runs get no
   * sandbox (a `notice` says why). docs/sandbox.md.
   */
  SANDBOX_CLOUD_PROVIDER: z.enum(['e2b']).optional(),
  /** E2B's API key (`X-API-KEY`). */
  E2B_API_KEY: optionalString,
  /** The E2B template sandboxes start from (python with matplotlib, node and bash). */
  E2B_TEMPLATE: z.string().min(1).default('code-interpreter-v1'),
  /** E2B's control API; unset: the SDK's default for `E2B_DOMAIN` (`https://api.e2b.app`). */
  E2B_API_URL: optionalString.pipe(z.string().url().optional()),
  /** One origin for every sandbox's envd (E2B's sandbox proxy); unset: the SDK's default. */
  E2B_SANDBOX_URL: optionalString.pipe(z.string().url().optional()),
  /** E2B's domain (self-hosted or regional E2B); unset: `e2b.app`. */
  E2B_DOMAIN: optionalString,
  /**
   * E2B pauses a sandbox this long after it was last created or reconnected: a safety net under
   * the idle sweep (SANDBOX_IDLE_TIMEOUT_MS) for when no worker runs.
   */
  E2B_SANDBOX_LIFETIME_MS: z.coerce.number().int().min(60_000).max(86_400_000).default(3_600_000),
  /** Web search (docs/web-search.md): Tavily's key; unset: Tavily is not used. */
  TAVILY_API_KEY: optionalString,
  TAVILY_API_BASE_URL: z.string().url().default('https://api.tavily.com'),
  /** Brave Search's key (`X-Subscription-Token`); unset: Brave is not used. */
  BRAVE_SEARCH_API_KEY: optionalString,
  BRAVE_SEARCH_API_BASE_URL: z.string().url().default('https://api.search.brave.com'),
  /** The order providers are tried in (those with a key). */
  WEB_SEARCH_PROVIDERS: z
    .string()
    .default('tavily,brave')
    .transform((value) =>
      value
        .split(',')
        .map((name) => name.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(['tavily', 'brave'])).min(1)),
  /** Deadline of one provider call; past it the next provider is tried. */
  WEB_SEARCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
  /** How long a query's results are reused (ephemeral store). */
  WEB_SEARCH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(300_000),
  /** Consecutive failures after which a provider is skipped for the cooldown. */
  WEB_SEARCH_BREAKER_FAILURES: z.coerce.number().int().min(1).default(3),
  WEB_SEARCH_BREAKER_COOLDOWN_MS: z.coerce.number().int().min(100).default(30_000),
  /**
   * SaaS account tools (docs/saas-tools.md): each provider's API origin, token
   * endpoint and the operator's OAuth client (without a client, expired tokens cannot be renewed).
   */
  GITHUB_API_BASE_URL: z.string().url().default('https://api.github.com'),
  GITHUB_OAUTH_TOKEN_URL: z.string().url().default('https://github.com/login/oauth/access_token'),
  GITHUB_CLIENT_ID: optionalString,
  GITHUB_CLIENT_SECRET: optionalString,
  GMAIL_API_BASE_URL: z.string().url().default('https://gmail.googleapis.com'),
  GOOGLE_DRIVE_API_BASE_URL: z.string().url().default('https://www.googleapis.com'),
  /** Gmail and Google Drive share Google's token endpoint and OAuth client. */
  GOOGLE_OAUTH_TOKEN_URL: z.string().url().default('https://oauth2.googleapis.com/token'),
  GOOGLE_CLIENT_ID: optionalString,
  GOOGLE_CLIENT_SECRET: optionalString,
  SLACK_API_BASE_URL: z.string().url().default('https://slack.com/api'),
  SLACK_OAUTH_TOKEN_URL: z.string().url().default('https://slack.com/api/oauth.v2.access'),
  SLACK_CLIENT_ID: optionalString,
  SLACK_CLIENT_SECRET: optionalString,
  NOTION_API_BASE_URL: z.string().url().default('https://api.notion.com'),
  NOTION_OAUTH_TOKEN_URL: z.string().url().default('https://api.notion.com/v1/oauth/token'),
  NOTION_CLIENT_ID: optionalString,
  NOTION_CLIENT_SECRET: optionalString,
  /** Whole deadline of one SaaS tool call (a refresh and one retry included). */
  SAAS_CALL_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(300_000).default(30_000),
  /** A rate-limited SaaS call is retried once when the wait it asks for is at most this. */
  SAAS_MAX_RETRY_AFTER_MS: z.coerce.number().int().min(0).max(60_000).default(10_000),
  /**
   * Per-user request rates (docs/limits.md), requests a minute for the whole deployment (Redis
   * counts for every replica). 0 turns a limit off. Over it: 429 `rate_limited`, `Retry-After`.
   */
  RATE_LIMIT_INVOKE_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(20),
  /** Approval decisions (`POST /api/agent/approvals/...`) a user may send a minute. */
  RATE_LIMIT_DECISIONS_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(60),
  /** Knowledge uploads (documents added) a user may make a minute. */
  RATE_LIMIT_KNOWLEDGE_UPLOAD_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(20),
  /** Knowledge searches a user may run a minute. */
  RATE_LIMIT_KNOWLEDGE_SEARCH_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(60),
  /** MCP server validations a user may start a minute (each opens connections or a process). */
  RATE_LIMIT_MCP_VALIDATE_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(10),
  /** Memory and skill writes a user may make a minute. */
  RATE_LIMIT_WRITES_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(60),
  /** Node tool calls over HTTP a user may make a minute. */
  RATE_LIMIT_NODE_TOOL_CALLS_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(60),
  /** Chat-platform messages one chat may have answered by a run a minute; more get a notice. */
  CHAT_MESSAGES_PER_CHAT_PER_MINUTE: z.coerce.number().int().min(0).max(100_000).default(10),
  /** Chat-platform messages of one platform (all chats) answered by a run a minute. */
  CHAT_MESSAGES_PER_PLATFORM_PER_MINUTE: z.coerce.number().int().min(0).max(1_000_000).default(600),
  /** Agent runs one user may have going at once, across replicas; 0: no limit. */
  MAX_CONCURRENT_RUNS_PER_USER: z.coerce.number().int().min(0).max(10_000).default(4),
  /** A run slot not renewed for this long (its replica crashed) is free again. */
  RUN_SLOT_LEASE_MS: z.coerce.number().int().min(1_000).max(600_000).default(30_000),
  /**
   * When the limits cannot be checked (Redis unreachable): `open` lets requests through
   * unlimited, `closed` refuses them with 429 `rate_limited` (never a 5xx).
   */
  LIMITS_ON_REDIS_ERROR: z.enum(['open', 'closed']).default('open'),
  /** `GET /metrics` (Prometheus) on every role; false: 404 and nothing is measured. */
  METRICS_ENABLED: booleanStringDefaultTrue,
  /** Bearer token `GET /metrics` requires; unset: no credential needed. */
  METRICS_TOKEN: operatorToken,
  /** Operator credential of the queue dashboard `/admin/queues`; unset: the dashboard is 404. */
  ADMIN_TOKEN: operatorToken,
  /**
   * OTLP collector base URL (`/v1/traces` is appended over HTTP); set: OpenTelemetry traces are
   * on. Read by the exporter itself, the standard way; validated here so a typo fails at start.
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']),
  /** The OTLP transport of every signal (only traces are exported here). */
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
  /** The OTLP transport of traces; wins over `OTEL_EXPORTER_OTLP_PROTOCOL`. */
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol,
  /** Service name of the traces; unset: `agent-backend-<role>`. */
  OTEL_SERVICE_NAME: optionalString,
  /** How long finished spans wait before they are sent in one batch (ms). */
  OTEL_BSP_SCHEDULE_DELAY: z.coerce.number().int().min(1).default(5_000),
  /**
   * Which traces are recorded (the OpenTelemetry specification's variable and values, read by
   * the SDK; validated here, since the SDK only logs an unknown value and samples everything).
   * Remote-sampler values (`jaeger_remote`, `xray`) are refused.
   */
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on'),
  /** The `traceidratio` samplers' ratio, 0 to 1; ignored by the others. */
  OTEL_TRACES_SAMPLER_ARG: z.preprocess(
    (v) => (typeof v === 'string' && v.trim() === '' ? undefined : v),
    z.coerce.number().min(0).max(1).default(1),
  ),
  /** pino level. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `json` (one object per line) or `pretty` (readable lines, for development). */
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  /** How long a SIGTERM waits for streams, sockets and jobs to drain before closing anyway. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
});

export type Env = z.output<typeof EnvSchema>;
