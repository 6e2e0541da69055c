import { z } from 'zod';
import { optionalString, booleanString, batchSize } from './env-fields.js';

/**
 * The tools a run may get: skills, code sandboxes (with the user-data erasure settings that sit
 * among them), web search, SaaS accounts.
 */
export const toolsEnv = {
  SKILLS_DIR: optionalString.describe(
    "the operator's skills: a folder of skill folders, each with a `SKILL.md`, offered to every user next to the shipped `skills/`; a skill here replaces a shipped one of the same name. Invalid skills are logged at start and left out (see [`skills.md`](skills.md))",
  ),
  SANDBOX_LOCAL_ROOT: optionalString.describe(
    "enables `sandbox_mode: local` (bubblewrap, [`sandbox.md`](sandbox.md)): each user's `working_directory` must resolve, after symlinks, inside `<root>/<user id>` (the id as one path segment; a relative `working_directory` starts there). Unset: local runs get no code tools and a `notice`. It must neither contain nor lie in `DATA_DIR` or `SANDBOX_STATE_DIR` (refused at start). Sandboxed code can read its folder's path within this root's file system in `/proc/self/mountinfo`: a volume of its own shows it `/<user id>/…` only",
  ),
  SANDBOX_STATE_DIR: optionalString.describe(
    "local sandboxes' own state (a private `/tmp` each, metadata); replicas on one host share it so any of them reconnects to a session's sandbox. Sandboxed code can read its state folder's path within this directory's file system in `/proc/self/mountinfo` (the whole host path, so `DATA_DIR`'s, by default): a volume of its own shows it `/<sandbox id>/…` only",
  ),
  SANDBOX_LOCAL_NETWORK: booleanString.describe(
    "give local sandboxes the host's network (off: a network namespace with nothing in it; Docker: network `none`, on: `bridge`). On with bubblewrap, users' code reaches every service on the host's loopback, this service's Redis and PostgreSQL included: set it only where none may be reached",
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
  ERASURE_BATCH_SIZE: batchSize(500).describe(
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
};
