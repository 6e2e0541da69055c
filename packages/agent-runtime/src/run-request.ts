import type {
  ChatAttachment,
  ChatHistoryItem,
  ConversationMode,
  HitlConfig,
  McpToolEntry,
  OAuthToolEntry,
  ResourceFile,
  SandboxFile,
  SandboxMode,
  SkillsConfig,
} from '@agent-backend/protocol';

/** The model a run talks to (an OpenAI-compatible chat completions endpoint). */
export interface RunModel {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly name: string;
  readonly temperature: number;
  /**
   * Who chose the URL: `request` (a user's `llm_config`, checked by the SSRF guard) or
   * `operator` (`DEFAULT_LLM_*`, trusted like the rest of the configuration).
   */
  readonly chosenBy: 'request' | 'operator';
}

/** What the run may use besides the built-in tools, and how. */
export interface RunCapabilities {
  /** The user's connected nodes' tools (through the gateway). */
  readonly nodeTools: boolean;
  readonly mcpServers: readonly McpToolEntry[];
  readonly oauthTools: readonly OAuthToolEntry[];
  readonly knowledgeBaseIds: readonly string[];
  readonly memory: boolean;
  readonly webSearch: boolean;
  readonly skills?: SkillsConfig;
  readonly sandbox: {
    /** Absent: the service's default (`cloud` where a cloud provider is configured, else `none`). */
    readonly mode?: SandboxMode;
    readonly workingDirectory?: string;
    readonly files: readonly SandboxFile[];
  };
}

/**
 * What a run needs, whoever asked for it: the HTTP invoke body, a scheduled task or a chat
 * message each map to this once, at their entry point; the runtime and every tool source read
 * only this.
 */
export interface RunRequest {
  /** The owner: the verified token's subject (or a chat's owner id). */
  readonly userId: string;
  /** The session to continue; absent: a new one is created. */
  readonly sessionId?: string;
  readonly message: string;
  readonly mode: ConversationMode;
  readonly model: RunModel;
  /** The client's history, used when the service has not stored the session yet. */
  readonly history: readonly ChatHistoryItem[];
  readonly attachments: readonly ChatAttachment[];
  readonly resourceFiles: readonly ResourceFile[];
  readonly capabilities: RunCapabilities;
  /** Human-in-the-loop approval rules; absent: tools run at once. */
  readonly hitl?: HitlConfig;
  /**
   * The caller already checked the user's daily token budget (invoke's admission), so the run
   * does not ask again before its first model request. @default false
   */
  readonly budgetChecked?: boolean;
}

/** The fields a caller must give; {@link runRequest} fills the rest with "nothing enabled". */
export type RunRequestInput = Pick<RunRequest, 'userId' | 'message' | 'model'> &
  Partial<Omit<RunRequest, 'userId' | 'message' | 'model' | 'capabilities'>> & {
    readonly capabilities?: Partial<RunCapabilities>;
  };

const NO_CAPABILITIES: RunCapabilities = {
  nodeTools: false,
  mcpServers: [],
  oauthTools: [],
  knowledgeBaseIds: [],
  memory: false,
  webSearch: false,
  sandbox: { mode: 'none', files: [] },
};

/** A run request with defaults: `agent` mode, no history, no files, no capabilities. */
export function runRequest(input: RunRequestInput): RunRequest {
  const { capabilities, ...rest } = input;
  return {
    mode: 'agent',
    history: [],
    attachments: [],
    resourceFiles: [],
    ...rest,
    capabilities: { ...NO_CAPABILITIES, ...capabilities },
  };
}
