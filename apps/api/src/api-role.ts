import { ModelUrlGuard } from '@agent-backend/agent-runtime';
import { embedderFromSettings, knowledgeSearcher } from '@agent-backend/knowledge';
import { createNodeToolCaller } from '@agent-backend/node-rpc';
import { createUrlGuard } from '@agent-backend/url-guard';
import type { MountedRole, ServiceContext } from '@agent-backend/runtime';
import { registerAgentRoutes } from './agent-routes.js';
import { registerAuthRoutes } from './auth-routes.js';
import { CHAT_MESSAGE_QUEUE, registerChatPlatformRoutes } from './chat-platform-routes.js';
import { registerKnowledgeRoutes } from './knowledge-routes.js';
import { registerMcpRoutes } from './mcp-routes.js';
import { registerNodeRoutes } from './node-routes.js';
import { registerScheduledTaskRoutes } from './scheduled-task-routes.js';

/** Mounts the HTTP API (spec section 4 endpoints served by `apps/api`) on the context's server. */
export async function mountApi(context: ServiceContext): Promise<MountedRole> {
  const { engines, config, logger } = context;
  /** Tool calls to users' nodes through whichever gateway replica holds them (spec 4.3 rule 3). */
  const nodeTools = createNodeToolCaller({
    bus: engines.bus,
    presence: engines.presence,
    defaultTimeoutMs: config.TOOL_CALL_TIMEOUT_MS,
  });
  registerAuthRoutes(context);
  registerMcpRoutes(context);
  /** One searcher (and embeddings client) for the HTTP search and the agent's tool. */
  const searchKnowledge = knowledgeSearcher(engines.db, {
    embedder: embedderFromSettings(config),
    onEmbeddingError: (error) =>
      logger.warn({ err: error }, 'query embedding failed; knowledge search used full text only'),
  });
  registerKnowledgeRoutes(context, searchKnowledge);
  registerNodeRoutes(context, nodeTools);
  // User-supplied model base URLs pass the same SSRF guard as MCP servers (DESIGN.md), plus the
  // model servers the operator named in LLM_ALLOWED_ORIGINS (which open nothing for MCP).
  const modelUrlGuard = new ModelUrlGuard(
    createUrlGuard({
      allowPrivateNetworks: config.MCP_ALLOW_PRIVATE_NETWORKS,
      allowedOrigins: config.LLM_ALLOWED_ORIGINS,
    }),
  );
  registerAgentRoutes(context, { nodeTools, modelUrlGuard, searchKnowledge });
  registerScheduledTaskRoutes(context);
  registerChatPlatformRoutes(context, async (job) => {
    await engines.jobs.add(CHAT_MESSAGE_QUEUE, job, { jobId: `${job.platform}-${job.event_id}` });
  });
  // After the server closed (runs ended with `server_shutdown`), not alongside it.
  context.app.addHook('onClose', async () => modelUrlGuard.close());
  return { name: 'api', close: async () => {} };
}
