import {
  AgentRunner,
  ModelUrlGuard,
  type Capability,
  type ToolSource,
} from '@agent-backend/agent-runtime';
import type { Config } from '@agent-backend/config';
import type { Engines } from '@agent-backend/engines';
import { createApprovalHook, createResumeApproval } from '@agent-backend/hitl';
import { knowledgeCapability, type KnowledgeSearcher } from '@agent-backend/knowledge';
import type { Logger } from '@agent-backend/logger';
import { mcpToolsCapability } from '@agent-backend/mcp-tools';
import { memoryCapability, type MemoryRepository } from '@agent-backend/memory';
import { NO_METRICS, type ServiceMetrics } from '@agent-backend/metrics';
import { nodeToolsCapability, type NodeToolCaller } from '@agent-backend/node-tools';
import { saasToolsCapability } from '@agent-backend/saas-tools';
import { sandboxCapability, type SandboxCapability } from '@agent-backend/sandbox';
import { embedderFromSettings } from '@agent-backend/search';
import { skillsCapability, type SkillCatalog } from '@agent-backend/skills';
import { createUrlGuard } from '@agent-backend/url-guard';
import { webSearchCapability } from '@agent-backend/web-search';
import { agentSettings, type AgentServiceSettings } from './settings.js';
import { runTokenBudget } from './token-budget.js';

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

/** The assembled agent of a process, shared by its roles (api, worker). */
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
 * scheduled tasks and chat-platform replies (worker). Each capability comes from its package's
 * `xxxCapability(deps, settings)` and is listed here once; what a given run gets is decided by
 * its `RunRequest` (its capabilities and mode), not by which entry point started it. Adding a
 * capability: its package's capability file, one line below, the dependency in this package's
 * package.json and tsconfig.json.
 */
export function createAgent(deps: AgentDeps, options: AgentOptions = {}): Agent {
  const { config, engines, logger } = deps;
  const { db, ephemeral } = engines;
  const metrics = deps.metrics ?? NO_METRICS;
  const embedder = embedderFromSettings(config); // one embeddings client: knowledge and memory
  const node = nodeToolsCapability(
    {
      logger,
      ...(options.nodeTools
        ? { caller: options.nodeTools }
        : { bus: engines.bus, presence: engines.presence }),
      ...(metrics.enabled ? { metrics: metrics.nodeTools } : {}),
    },
    config,
  );
  const mcp = mcpToolsCapability({ logger }, config);
  const knowledge = knowledgeCapability({ db, embedder, logger, search: options.searchKnowledge });
  const memory = memoryCapability({ db, embedder, logger });
  const skills = skillsCapability({ db, logger }, config);
  // The active skills' resources are copied into the run's sandbox.
  const sandbox = sandboxCapability({ db, ephemeral, runFiles: skills.runFiles, logger }, config);
  const webSearch = webSearchCapability({ ephemeral }, config);
  const saas = saasToolsCapability({ ephemeral }, config);
  // In this order their tools are offered (node tools fill what the others leave).
  const capabilities: Capability[] = [
    node,
    mcp,
    knowledge,
    memory,
    skills,
    sandbox,
    webSearch,
    saas,
  ];
  // User-supplied model base URLs pass the same SSRF guard as MCP servers, plus the model
  // servers the operator named in LLM_ALLOWED_ORIGINS (which open nothing for MCP); every
  // request of a run's model client goes through its guarded fetch (docs/architecture.md).
  const modelUrlGuard = new ModelUrlGuard(
    createUrlGuard({
      allowPrivateNetworks: config.MCP_ALLOW_PRIVATE_NETWORKS,
      allowedOrigins: config.LLM_ALLOWED_ORIGINS,
    }),
  );
  const settings = agentSettings(config);
  const tokenBudget = runTokenBudget({
    limits: engines.limits,
    perDay: config.TOKEN_BUDGET_PER_USER_PER_DAY,
    logger,
    metrics,
  });
  const approvals = {
    ephemeral,
    bus: engines.bus,
    logger,
    ...(metrics.enabled ? { metrics: metrics.hitl } : {}),
  };
  const runner = new AgentRunner({
    db,
    ephemeral,
    logger,
    settings: settings.runner,
    toolSources: [...capabilities.map((c) => c.source), ...(options.toolSources ?? [])],
    // Human-in-the-loop approval (docs/hitl.md); a no-op for runs without approval rules.
    beforeToolCall: createApprovalHook(approvals),
    // The same, for calls held while their run was suspended (docs/hitl.md).
    resumeApproval: createResumeApproval(approvals),
    modelUrlGuard,
    ...(tokenBudget ? { tokenBudget } : {}),
    ...(metrics.enabled ? { metrics: metrics.agent } : {}),
  });
  return {
    runner,
    settings,
    nodeTools: node.caller,
    searchKnowledge: knowledge.search,
    memories: memory.memories,
    skills: skills.catalog,
    sandboxes: sandbox,
    close: async () => {
      modelUrlGuard.close();
      await Promise.all(capabilities.map((capability) => capability.close?.()));
    },
  };
}
