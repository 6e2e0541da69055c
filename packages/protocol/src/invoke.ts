import { z } from 'zod';
import { boundedJson } from './json-bounds.js';
import { httpUrl } from './http-url.js';
import { checkMcpBaseUrl, mcpServerShape } from './mcp-server.js';

/** The sampling temperature of a run whose `llm_config` names none, and of the operator's default model (`DEFAULT_LLM_*`). */
export const DEFAULT_TEMPERATURE = 0.7;

/**
 * The model a run uses (spec 2.2). Supplied by the client per request, so it is validated as
 * untrusted input; `apiKey` must never be logged or echoed in an error.
 */
export const LlmConfig = z.object({
  /** An OpenAI-compatible API root, http or https. */
  baseUrl: httpUrl('baseUrl must be an http(s) URL'),
  apiKey: z.string().min(1),
  modelName: z.string().min(1),
  /** Sampling temperature; 0..2 is the range OpenAI-compatible APIs accept. @default 0.7 */
  temperature: z.number().min(0).max(2).default(DEFAULT_TEMPERATURE),
});
export type LlmConfig = z.infer<typeof LlmConfig>;
export type LlmConfigInput = z.input<typeof LlmConfig>;

/**
 * An MCP server whose tools the run may call (spec 2.3): the fields of the validation body plus
 * `type`. `base_url` must be http(s) unless `transport_type` is `stdio`.
 */
export const McpToolEntry = z
  .object({ type: z.literal('mcp'), ...mcpServerShape })
  .superRefine(checkMcpBaseUrl);
export type McpToolEntry = z.infer<typeof McpToolEntry>;

/** The SaaS providers an `oauth` tool entry may name (spec 2.3 describes five; these are ours). */
export const OAUTH_PROVIDERS = ['github', 'gmail', 'google_drive', 'slack', 'notion'] as const;
export const OAuthProvider = z.enum(OAUTH_PROVIDERS, {
  message: `must be one of ${OAUTH_PROVIDERS.join(', ')}`,
});
export type OAuthProvider = z.infer<typeof OAuthProvider>;

/**
 * A third-party account the run may act on (spec 2.3): `name` is the provider. `expires_at` is
 * the access token's expiry in seconds since the epoch (milliseconds are accepted: values above
 * 10^12 are read as such); `credentials_refreshed` answers in the unit it was given.
 */
export const OAuthToolEntry = z.object({
  type: z.literal('oauth'),
  name: OAuthProvider,
  access_token: z.string().min(1),
  refresh_token: z.string().optional(),
  expires_at: z.number().optional(),
});
export type OAuthToolEntry = z.infer<typeof OAuthToolEntry>;

/** One entry of the invoke request's `tools` array, selected by `type` (spec 2.3). */
export const ToolEntry = z.discriminatedUnion('type', [McpToolEntry, OAuthToolEntry]);
export type ToolEntry = z.infer<typeof ToolEntry>;
export type ToolEntryInput = z.input<typeof ToolEntry>;

/** Skill selection for a run (spec 2.4). */
export const SkillsConfig = z.object({
  /** Explicitly activated skills; when empty, skills are matched automatically. @default [] */
  skill_names: z.array(z.string().min(1)).default([]),
  /** @default true */
  auto_match: z.boolean().default(true),
  /** @default 3 */
  max_skills: z.number().int().positive().default(3),
});
export type SkillsConfig = z.infer<typeof SkillsConfig>;

/**
 * What a person may answer to an interrupted tool call. The spec leaves the shape open; these
 * are the three decisions of LangChain's HITL middleware, which the runtime follows.
 */
export const HitlDecision = z.enum(['approve', 'edit', 'reject']);
export type HitlDecision = z.infer<typeof HitlDecision>;

/**
 * Longest approval timeout, in seconds: 7 days. A run waiting longer than its client stays
 * suspends (docs/hitl.md), so the wait holds no server.
 */
export const MAX_APPROVAL_TIMEOUT_S = 7 * 24 * 3600;

/**
 * HITL settings of one tool (spec 2.5). `requires_interrupt` and `timeout` are left unset when
 * omitted (no default here) because they inherit the config's `default_requires_interrupt` and
 * `default_timeout`, which a nested default could not see.
 */
export const HitlToolConfig = z.object({
  /** @default true */
  enabled: z.boolean().default(true),
  requires_interrupt: z.boolean().optional(),
  /** @default ['approve', 'edit', 'reject'] */
  allowed_decisions: z.array(HitlDecision).min(1).default(['approve', 'edit', 'reject']),
  /** Seconds to wait for a decision, at most 7 days (604800). */
  timeout: z.number().positive().max(MAX_APPROVAL_TIMEOUT_S).optional(),
});
export type HitlToolConfig = z.infer<typeof HitlToolConfig>;

/**
 * Human-in-the-loop approval of tool calls (spec 2.5). Optional on the invoke request with no
 * default: its absence means the run does not interrupt for approval.
 */
export const HitlConfig = z.object({
  /** Tool name to its settings. @default {} */
  tools: boundedJson(z.record(z.string(), HitlToolConfig), { maxChars: 256 * 1024 }).default({}),
  /** Applies to tools not listed in `tools`. @default true */
  default_requires_interrupt: z.boolean().default(true),
  /** Tools that run without interruption. @default [] */
  allowlist: z.array(z.string()).default([]),
  /** Seconds, at most 7 days (604800). @default 60 */
  default_timeout: z.number().positive().max(MAX_APPROVAL_TIMEOUT_S).default(60),
});
export type HitlConfig = z.infer<typeof HitlConfig>;

/** Speaker of a chat-history entry. The spec leaves it open; these are the OpenAI chat roles. */
export const ChatRole = z.enum(['user', 'assistant', 'system']);
export type ChatRole = z.infer<typeof ChatRole>;

/** A previous turn of the conversation (spec 2.6). */
export const ChatHistoryItem = z.object({
  role: ChatRole,
  content: z.string(),
  /** The spec gives no type: an ISO 8601 string or epoch milliseconds are both accepted. */
  timestamp: z.union([z.string(), z.number()]).optional(),
});
export type ChatHistoryItem = z.infer<typeof ChatHistoryItem>;

/** A text file given to the run as context (spec 2.6). `type` is free text (MIME or extension). */
export const ResourceFile = z.object({
  name: z.string(),
  content: z.string(),
  type: z.string(),
});
export type ResourceFile = z.infer<typeof ResourceFile>;

/** A file already in the sandbox (spec 2.6); `size` in bytes. */
export const SandboxFile = z.object({
  name: z.string(),
  path: z.string(),
  type: z.string(),
  size: z.number().nonnegative().optional(),
});
export type SandboxFile = z.infer<typeof SandboxFile>;

/** A file attached to the message (spec 2.6); `size` in bytes, `content` as the client sends it. */
export const ChatAttachment = z.object({
  id: z.string(),
  name: z.string(),
  size: z.number().nonnegative(),
  type: z.string(),
  content: z.string(),
});
export type ChatAttachment = z.infer<typeof ChatAttachment>;

/** Conversation mode (spec 3.3): `agent` full, `ask` read-only, `plan` interactive planning. */
export const ConversationMode = z.enum(['agent', 'ask', 'plan']);
export type ConversationMode = z.infer<typeof ConversationMode>;

/** Where code runs (spec 4.2): a cloud sandbox, a local container, or nowhere. */
export const SandboxMode = z.enum(['cloud', 'local', 'none']);
export type SandboxMode = z.infer<typeof SandboxMode>;

/**
 * Body of `POST /api/agent/invoke` (spec 4.2). The user comes from the access token, never from
 * this body. `skills` and `hitl_config` have no default: absent means the feature is off.
 */
export const InvokeRequest = z
  .object({
    message: z.string().min(1),
    llm_config: LlmConfig,
    /** Generated by the service when omitted. */
    session_id: z.string().min(1).optional(),
    /** @default 'agent' */
    mode: ConversationMode.default('agent'),
    /** @default [] */
    tools: z.array(ToolEntry).default([]),
    /**
     * Absent: the service's default, `cloud` where it has a cloud sandbox provider and `none`
     * otherwise (so a service without one does not greet every run with a notice).
     */
    sandbox_mode: SandboxMode.optional(),
    /**
     * Directory of the local container's workspace. The spec names it without a type or place;
     * it is a top-level string, required when `sandbox_mode` is `local` and ignored otherwise.
     */
    working_directory: z.string().min(1).optional(),
    /** @default false */
    enable_web_search: z.boolean().default(false),
    /** Non-empty registers the `search_knowledge_base` tool. @default [] */
    knowledge_base_ids: z.array(z.string().min(1)).default([]),
    /** @default false */
    enable_memory: z.boolean().default(false),
    skills: SkillsConfig.optional(),
    /** @default [] */
    chat_history: z.array(ChatHistoryItem).default([]),
    /** @default [] */
    resource_files: z.array(ResourceFile).default([]),
    /** @default [] */
    sandbox_files: z.array(SandboxFile).default([]),
    /** @default [] */
    chat_attachments: z.array(ChatAttachment).default([]),
    hitl_config: HitlConfig.optional(),
    /**
     * Not in the spec: run without a stream. The answer is 202 {@link BackgroundRunAccepted};
     * the run executes on a worker and its events are read (and re-read) with
     * `GET /api/agent/runs/:run_id/stream`. @default false
     */
    background: z.boolean().optional(),
  })
  .superRefine((value, ctx) => {
    const seen = new Set<string>();
    value.tools.forEach((entry, index) => {
      if (entry.type !== 'oauth') return;
      if (seen.has(entry.name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['tools', index, 'name'],
          message: `only one ${entry.name} account per run`,
        });
      }
      seen.add(entry.name);
    });
    if (value.sandbox_mode === 'local' && value.working_directory === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['working_directory'],
        message: 'working_directory is required when sandbox_mode is "local"',
      });
    }
  });
export type InvokeRequest = z.infer<typeof InvokeRequest>;

/** 202 answer of `POST /api/agent/invoke` with `background: true`. */
export const BackgroundRunAccepted = z.object({
  run_id: z.string().min(1),
  session_id: z.string().min(1),
});
export type BackgroundRunAccepted = z.infer<typeof BackgroundRunAccepted>;
export type InvokeRequestInput = z.input<typeof InvokeRequest>;
