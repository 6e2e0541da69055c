import { z } from 'zod';
import { optionalString } from './env-fields.js';

/** Limits per user, per chat and per client address, and how the client address is found. */
export const limitsEnv = {
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
};
