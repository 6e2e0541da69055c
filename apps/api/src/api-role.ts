import { createAgent, type Agent, type AgentOptions } from '@agent-backend/agent';
import type { MountedRole, ServiceContext } from '@agent-backend/runtime';
import { registerAgentRoutes } from './agent-routes.js';
import { registerAuditRoutes } from './audit-routes.js';
import { registerAuthRoutes } from './auth-routes.js';
import { acceptChatMessage } from '@agent-backend/chat-platform';
import { registerChatPlatformRoutes } from './chat-platform-routes.js';
import { registerDocsRoutes } from './docs-routes.js';
import { registerKnowledgeRoutes } from './knowledge-routes.js';
import { registerMcpRoutes } from './mcp-routes.js';
import { registerMemoryRoutes } from './memory-routes.js';
import { registerSkillRoutes } from './skill-routes.js';
import { registerNodeRoutes } from './node-routes.js';
import { registerOperatorRoutes } from './operator/operator-routes.js';
import { registerPlaygroundRoutes } from './playground-routes.js';
import { registerScheduledTaskRoutes } from './scheduled-task-routes.js';
import { registerTokenRoutes } from './token-routes.js';
import { registerJwksRoute } from './jwks-route.js';
import { registerOperatorUserDataRoutes, registerUserDataRoutes } from './user-data-routes.js';
import { serviceUserData } from '@agent-backend/user-data';
import { mountQueueDashboard } from './queue-dashboard.js';
import { warmModelClient } from './model-client-warmup.js';

export interface ApiOptions {
  /** Passed to the agent factory (extra tool sources, for an embedder's own capability). */
  readonly agentOptions?: AgentOptions;
  /**
   * The process's agent, when the composition root built it for several roles (the
   * all-in-one: one MCP pool, one skills catalog); the caller closes it. Absent: the api builds
   * its own from `agentOptions` and closes it.
   */
  readonly sharedAgent?: Agent;
}

/** Mounts the HTTP API (spec section 4 endpoints served by `apps/api`) on the context's server. */
export async function mountApi(
  context: ServiceContext,
  options: ApiOptions = {},
): Promise<MountedRole> {
  const { engines } = context;
  // The agent of invoke runs; its node tool caller (through whichever gateway replica holds the
  // node, spec 4.3 rule 3) and knowledge searcher (one embeddings client) serve the HTTP routes too.
  const agent = options.sharedAgent ?? createAgent(context, options.agentOptions);
  context.app.use(warmModelClient);
  registerAuthRoutes(context);
  registerTokenRoutes(context);
  registerJwksRoute(context);
  registerMcpRoutes(context);
  registerKnowledgeRoutes(context, agent.searchKnowledge);
  registerNodeRoutes(context, agent.nodeTools);
  registerMemoryRoutes(context, agent.memories);
  registerSkillRoutes(context, agent.skills);
  const agentServices = registerAgentRoutes(context, agent);
  registerScheduledTaskRoutes(context);
  // An erasure stops the user's runs on every replica first (docs/operations.md).
  const userData = serviceUserData(context, agent.sandboxes.providers, (userId) =>
    agentServices.runs.stopUser(userId),
  );
  registerUserDataRoutes(context, userData);
  registerPlaygroundRoutes(context);
  // Recorded in the store, then queued: the queue (Redis) may lose it, the store may not.
  registerChatPlatformRoutes(context, (job) => acceptChatMessage(engines, job));
  registerAuditRoutes(context);
  // /api/operator/*: behind ADMIN_TOKEN, never mounted without it (docs/operations.md).
  const operator = registerOperatorRoutes(context, agentServices);
  registerOperatorUserDataRoutes(operator, context, userData);
  registerDocsRoutes(context);
  await mountQueueDashboard(context); // /admin/queues: docs/operations.md
  // Closed after the server closed (runs ended with `server_shutdown`), not alongside it.
  if (!options.sharedAgent) context.app.addHook('onClose', () => agent.close());
  return { name: 'api', close: async () => {} };
}
