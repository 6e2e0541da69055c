import {
  AgentRunner,
  ModelUrlGuard,
  type RunInfo,
  type ToolSource,
} from '@agent-backend/agent-runtime';
import type { Config } from '@agent-backend/config';
import type { Engines } from '@agent-backend/engines';
import { createApprovalHook } from '@agent-backend/hitl';
import {
  knowledgeSearcher,
  knowledgeToolSource,
  type KnowledgeSearcher,
} from '@agent-backend/knowledge';
import { join } from 'node:path';
import type { Logger } from '@agent-backend/logger';
import { createMcpTools, mcpPolicy } from '@agent-backend/mcp-tools';
import { MemoryRepository, memoryPromptSection, memoryTools } from '@agent-backend/memory';
import { embedderFromSettings } from '@agent-backend/search';
import {
  describeProblems,
  loadSharedSkills,
  prepareRunSkills,
  SkillCatalog,
  type RunSkills,
  SkillRepository,
} from '@agent-backend/skills';
import {
  createNodeToolCaller,
  instrumentNodeToolCaller,
  type NodeToolCaller,
} from '@agent-backend/node-rpc';
import { NO_METRICS, type ServiceMetrics } from '@agent-backend/metrics';
import { saasToolSource } from '@agent-backend/saas-tools';
import {
  BubblewrapSandboxProvider,
  createSandboxCapability,
  DockerSandboxProvider,
  E2BSandboxProvider,
  RUN_FILES_DIR,
  type RunFiles,
  type SandboxCapability,
} from '@agent-backend/sandbox';
import { createUrlGuard } from '@agent-backend/url-guard';
import {
  braveProvider,
  tavilyProvider,
  WebSearch,
  webSearchTool,
  type SearchProvider,
} from '@agent-backend/web-search';
import { agentSettings, type AgentServiceSettings } from './settings.js';

/** What the factory builds from: one process's configuration, engines and logger. */
export interface AgentDeps {
  readonly config: Config;
  readonly engines: Engines;
  readonly logger: Logger;
  /** Where runs, model requests, node tool calls and approvals are counted. @default none */
  readonly metrics?: ServiceMetrics;
}

/** Optional parts; each one absent is built from the configuration. */
export interface AgentOptions {
  /** Tool calls to users' nodes through the gateway (shared with the node HTTP routes). */
  readonly nodeTools?: NodeToolCaller;
  /** Knowledge search (shared with the HTTP search endpoint: one embeddings client). */
  readonly searchKnowledge?: KnowledgeSearcher;
  /** More tool sources, after the built-in capabilities (an embedder's own capability, tests). */
  readonly toolSources?: readonly ToolSource[];
}

/** The assembled agent of one role. */
export interface Agent {
  readonly runner: AgentRunner;
  readonly settings: AgentServiceSettings;
  readonly nodeTools: NodeToolCaller;
  readonly searchKnowledge: KnowledgeSearcher;
  /** Users' long-term memories (shared with the `/api/memories` endpoints). */
  readonly memories: MemoryRepository;
  /** The skills catalog: shipped, `SKILLS_DIR`, users' own (shared with `/api/skills`). */
  readonly skills: Promise<SkillCatalog>;
  /** Code execution: the sessions' sandboxes (the worker sweeps them). */
  readonly sandboxes: SandboxCapability;
  /** Closes what the agent holds open (MCP connections, pooled model connections). */
  close(): Promise<void>;
}

/**
 * The one place an agent run's machinery is assembled, for every kind of run: invoke (api),
 * scheduled tasks and chat-platform replies (worker). Each capability is a tool source added
 * here once; what a given run gets is decided by its `RunRequest` (its capabilities and mode),
 * not by which entry point started it.
 */
export function createAgent(deps: AgentDeps, options: AgentOptions = {}): Agent {
  const { config, engines, logger } = deps;
  const metrics = deps.metrics ?? NO_METRICS;
  const settings = agentSettings(config);
  const caller =
    options.nodeTools ??
    createNodeToolCaller({
      bus: engines.bus,
      presence: engines.presence,
      defaultTimeoutMs: config.TOOL_CALL_TIMEOUT_MS,
    });
  const nodeTools = metrics.enabled ? instrumentNodeToolCaller(caller, metrics.nodeTools) : caller;
  const embedder = embedderFromSettings(config);
  const searchKnowledge =
    options.searchKnowledge ??
    knowledgeSearcher(engines.db, {
      embedder,
      onEmbeddingError: (error) =>
        logger.warn({ err: error }, 'query embedding failed; knowledge search used full text only'),
    });
  const memories = new MemoryRepository(engines.db, {
    embedder,
    onEmbeddingError: (error) =>
      logger.warn({ err: error }, 'memory embedding failed; memory search used full text only'),
  });
  // Long-term memory (docs/memory.md): the three tools, and the memories most relevant to the
  // message in the system prompt, for runs with `enable_memory`.
  const memorySource: ToolSource = async (run) => {
    if (!run.request.capabilities.memory) return [];
    const { userId, sessionId, runId } = run;
    const section = await memoryPromptSection(
      memories,
      userId,
      run.request.message,
      undefined,
      run.signal,
    );
    return {
      tools: memoryTools(memories, { userId, sessionId, runId }),
      promptSections: section ? [section] : [],
    };
  };
  // Skills (docs/skills.md): the shared ones are read once, in the background; a run waits for
  // them only when it asks for skills. Invalid skills are logged, not fatal.
  const skills = loadSharedSkills({ operatorDir: config.SKILLS_DIR }).then((shared) => {
    for (const invalid of shared.invalid) {
      logger.warn(
        { skill: invalid.folder, problems: describeProblems(invalid.problems) },
        'invalid skill left out',
      );
    }
    if (shared.replaced.length > 0) {
      logger.info({ skills: shared.replaced }, 'SKILLS_DIR replaces shipped skills');
    }
    return new SkillCatalog(shared, new SkillRepository(engines.db));
  });
  skills.catch((err: unknown) => logger.error({ err }, 'skills could not be loaded'));
  // One preparation of a run's skills, shared by the skills source and the sandbox (which copies
  // the active skills' resources into the run's sandbox).
  const runSkills = new WeakMap<RunInfo, Promise<RunSkills | undefined>>();
  const skillsFor = (run: RunInfo) => {
    let prepared = runSkills.get(run);
    if (!prepared) {
      prepared = skills.then(async (catalog) =>
        prepareRunSkills(catalog, {
          userId: run.userId,
          skills: run.request.capabilities.skills,
          message: run.request.message,
          recentTurns: run.request.capabilities.skills
            ? await (run.earlierUserTurns?.() ?? [])
            : [],
        }),
      );
      runSkills.set(run, prepared);
    }
    return prepared;
  };
  const skillsSource: ToolSource = async (run) => {
    const prepared = await skillsFor(run);
    if (!prepared) return [];
    return {
      tools: prepared.tools,
      promptSections: prepared.promptSection ? [prepared.promptSection] : [],
      events: [prepared.event],
    };
  };
  const skillFiles = async (run: RunInfo): Promise<RunFiles | undefined> => {
    const prepared = await skillsFor(run).catch(() => undefined);
    if (!prepared) return undefined;
    const catalog = await skills;
    return {
      note:
        `Files of active skills are in the sandbox under ${RUN_FILES_DIR}/<skill name>/, ` +
        'at the paths listed for each skill.',
      current: () =>
        prepared.activeSkills().flatMap((skill) =>
          skill.resources.map((resource) => ({
            path: `${RUN_FILES_DIR}/${skill.name}/${resource.path}`,
            read: () => catalog.readResource(run.userId, skill, resource.path),
          })),
        ),
    };
  };
  // Code execution (docs/sandbox.md): local runs in bubblewrap or Docker under SANDBOX_LOCAL_ROOT, cloud
  // runs on E2B when SANDBOX_CLOUD_PROVIDER=e2b; a mode without a provider gets a notice.
  const sandboxes = createSandboxCapability({
    db: engines.db,
    ephemeral: engines.ephemeral,
    ...(config.SANDBOX_LOCAL_ROOT
      ? {
          local: {
            root: config.SANDBOX_LOCAL_ROOT,
            provider:
              config.SANDBOX_LOCAL_RUNTIME === 'docker'
                ? new DockerSandboxProvider({
                    stateDir: config.SANDBOX_STATE_DIR ?? join(config.DATA_DIR, 'sandboxes'),
                    host: config.DOCKER_HOST,
                    image: config.SANDBOX_DOCKER_IMAGE,
                    network: config.SANDBOX_LOCAL_NETWORK,
                    user: config.SANDBOX_DOCKER_USER,
                    idleStopMs: config.SANDBOX_IDLE_TIMEOUT_MS,
                  })
                : new BubblewrapSandboxProvider({
                    stateDir: config.SANDBOX_STATE_DIR ?? join(config.DATA_DIR, 'sandboxes'),
                    network: config.SANDBOX_LOCAL_NETWORK,
                  }),
          },
        }
      : {}),
    ...(config.SANDBOX_CLOUD_PROVIDER === 'e2b' && config.E2B_API_KEY
      ? {
          cloud: new E2BSandboxProvider({
            apiKey: config.E2B_API_KEY,
            template: config.E2B_TEMPLATE,
            apiUrl: config.E2B_API_URL,
            sandboxUrl: config.E2B_SANDBOX_URL,
            domain: config.E2B_DOMAIN,
            lifetimeMs: config.E2B_SANDBOX_LIFETIME_MS,
          }),
        }
      : {}),
    tools: {
      timeoutMs: config.SANDBOX_CALL_TIMEOUT_MS,
      maxOutputBytes: config.SANDBOX_MAX_OUTPUT_BYTES,
      maxReadBytes: config.SANDBOX_MAX_OUTPUT_BYTES,
    },
    runFiles: skillFiles,
    sessions: {
      deployment: config.SANDBOX_DEPLOYMENT,
      leaseMs: config.SANDBOX_CREATE_LEASE_MS,
      idleMs: config.SANDBOX_IDLE_TIMEOUT_MS,
      maxIdleMs: config.SANDBOX_MAX_IDLE_MS,
    },
  });
  // Web search (docs/web-search.md): the providers with a key, in WEB_SEARCH_PROVIDERS order.
  const searchProviders: SearchProvider[] = config.WEB_SEARCH_PROVIDERS.flatMap((name) => {
    if (name === 'tavily' && config.TAVILY_API_KEY) {
      return [
        tavilyProvider({ apiKey: config.TAVILY_API_KEY, baseUrl: config.TAVILY_API_BASE_URL }),
      ];
    }
    if (name === 'brave' && config.BRAVE_SEARCH_API_KEY) {
      return [
        braveProvider({
          apiKey: config.BRAVE_SEARCH_API_KEY,
          baseUrl: config.BRAVE_SEARCH_API_BASE_URL,
        }),
      ];
    }
    return [];
  });
  const webSearch = new WebSearch(searchProviders, engines.ephemeral, {
    timeoutMs: config.WEB_SEARCH_TIMEOUT_MS,
    cacheTtlMs: config.WEB_SEARCH_CACHE_TTL_MS,
    breakerFailures: config.WEB_SEARCH_BREAKER_FAILURES,
    breakerCooldownMs: config.WEB_SEARCH_BREAKER_COOLDOWN_MS,
  });
  const webSearchSource: ToolSource = async (run) => {
    if (!run.request.capabilities.webSearch) return [];
    if (searchProviders.length === 0) {
      return {
        events: [
          {
            type: 'notice',
            code: 'web_search_unavailable',
            message: 'Web search is not configured on this service, so the answer cannot use it.',
          },
        ],
      };
    }
    return [webSearchTool(webSearch)];
  };
  // Connected SaaS accounts (docs/saas-tools.md): the `oauth` entries' tools, tokens refreshed
  // once across replicas through the ephemeral store.
  const google = {
    tokenUrl: config.GOOGLE_OAUTH_TOKEN_URL,
    clientId: config.GOOGLE_CLIENT_ID,
    clientSecret: config.GOOGLE_CLIENT_SECRET,
  };
  const saasSource = saasToolSource({
    ephemeral: engines.ephemeral,
    endpoints: {
      github: {
        apiBaseUrl: config.GITHUB_API_BASE_URL,
        tokenUrl: config.GITHUB_OAUTH_TOKEN_URL,
        clientId: config.GITHUB_CLIENT_ID,
        clientSecret: config.GITHUB_CLIENT_SECRET,
      },
      gmail: { apiBaseUrl: config.GMAIL_API_BASE_URL, ...google },
      google_drive: { apiBaseUrl: config.GOOGLE_DRIVE_API_BASE_URL, ...google },
      slack: {
        apiBaseUrl: config.SLACK_API_BASE_URL,
        tokenUrl: config.SLACK_OAUTH_TOKEN_URL,
        clientId: config.SLACK_CLIENT_ID,
        clientSecret: config.SLACK_CLIENT_SECRET,
      },
      notion: {
        apiBaseUrl: config.NOTION_API_BASE_URL,
        tokenUrl: config.NOTION_OAUTH_TOKEN_URL,
        clientId: config.NOTION_CLIENT_ID,
        clientSecret: config.NOTION_CLIENT_SECRET,
      },
    },
    settings: {
      callTimeoutMs: config.SAAS_CALL_TIMEOUT_MS,
      maxRetryAfterMs: config.SAAS_MAX_RETRY_AFTER_MS,
    },
  });
  const mcpTools = createMcpTools({ policy: mcpPolicy(config), logger });
  // User-supplied model base URLs pass the same SSRF guard as MCP servers, plus the model
  // servers the operator named in LLM_ALLOWED_ORIGINS (which open nothing for MCP); every
  // request of a run's model client goes through its guarded fetch (docs/architecture.md).
  const modelUrlGuard = new ModelUrlGuard(
    createUrlGuard({
      allowPrivateNetworks: config.MCP_ALLOW_PRIVATE_NETWORKS,
      allowedOrigins: config.LLM_ALLOWED_ORIGINS,
    }),
  );
  const runner = new AgentRunner({
    db: engines.db,
    ephemeral: engines.ephemeral,
    logger,
    settings: settings.runner,
    nodeTools,
    toolSources: [
      mcpTools.source,
      knowledgeToolSource(searchKnowledge),
      memorySource,
      skillsSource,
      sandboxes.source,
      webSearchSource,
      saasSource,
      ...(options.toolSources ?? []),
    ],
    // Human-in-the-loop approval (docs/hitl.md); a no-op for runs without approval rules.
    beforeToolCall: createApprovalHook({
      ephemeral: engines.ephemeral,
      bus: engines.bus,
      logger,
      ...(metrics.enabled ? { metrics: metrics.hitl } : {}),
    }),
    modelUrlGuard,
    ...(metrics.enabled ? { metrics: metrics.agent } : {}),
  });
  return {
    runner,
    settings,
    nodeTools,
    searchKnowledge,
    memories,
    skills,
    sandboxes,
    close: async () => {
      modelUrlGuard.close();
      await mcpTools.close();
    },
  };
}
