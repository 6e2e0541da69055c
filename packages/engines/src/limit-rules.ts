import type { Config } from '@agent-backend/config';
import type { RateRule } from '@agent-backend/limits';

const MINUTE = 60_000;

/**
 * The request rate classes (docs/limits.md): a route opts into one with
 * `limit: context.limits.rate('<class>')`.
 */
export type RateLimitName =
  | 'invoke'
  | 'decisions'
  | 'knowledge_upload'
  | 'knowledge_search'
  | 'mcp_validate'
  | 'writes'
  | 'node_tool_calls'
  /** `POST /api/auth/refresh`, keyed by client address. */
  | 'refresh'
  /** Chat-platform webhook requests, keyed by client address. */
  | 'webhook'
  /** Chat-platform messages of one chat (keyed `<platform>:<chat_id>`). */
  | 'chat_messages'
  /** Chat-platform messages of one platform, all chats together. */
  | 'platform_messages';

/** Each rate class's rule from its `RATE_LIMIT_*_PER_MINUTE` setting (0: off). */
export function limitRules(config: Config): Record<RateLimitName, RateRule> {
  const perMinute = (points: number): RateRule => ({ points, windowMs: MINUTE });
  return {
    invoke: perMinute(config.RATE_LIMIT_INVOKE_PER_MINUTE),
    decisions: perMinute(config.RATE_LIMIT_DECISIONS_PER_MINUTE),
    knowledge_upload: perMinute(config.RATE_LIMIT_KNOWLEDGE_UPLOAD_PER_MINUTE),
    knowledge_search: perMinute(config.RATE_LIMIT_KNOWLEDGE_SEARCH_PER_MINUTE),
    mcp_validate: perMinute(config.RATE_LIMIT_MCP_VALIDATE_PER_MINUTE),
    writes: perMinute(config.RATE_LIMIT_WRITES_PER_MINUTE),
    node_tool_calls: perMinute(config.RATE_LIMIT_NODE_TOOL_CALLS_PER_MINUTE),
    refresh: perMinute(config.RATE_LIMIT_REFRESH_PER_MINUTE),
    webhook: perMinute(config.RATE_LIMIT_WEBHOOK_PER_MINUTE),
    chat_messages: perMinute(config.CHAT_MESSAGES_PER_CHAT_PER_MINUTE),
    platform_messages: perMinute(config.CHAT_MESSAGES_PER_PLATFORM_PER_MINUTE),
  };
}
