import { createAgent } from '@agent-backend/agent';
import { RefreshTokenService } from '@agent-backend/auth';
import { startService } from '@agent-backend/runtime';
import { mountApi } from '@agent-backend/api';
import { mountGateway } from '@agent-backend/gateway';
import { mountWorker } from '@agent-backend/worker';
import {
  ISSUED_BY_CLI,
  KEY_ROTATED_BY_CLI,
  REVOKED_BY_CLI,
  startControlSocket,
} from './control-socket.js';

/**
 * The all-in-one entry: api, gateway and worker in one process on one port, sharing one set of
 * engines (in-process and PGlite by default). This composition root is the one place that
 * imports the apps; the apps never import each other. The api and the worker share one agent
 * (one MCP connection pool, one skills catalog, one node tool caller), closed once the server
 * closed, as the api alone closes its own.
 */
await startService('all-in-one', {
  migrate: true,
  mount: async (context) => {
    const agent = createAgent(context);
    const api = await mountApi(context, { sharedAgent: agent });
    context.app.addHook('onClose', () => agent.close());
    const gateway = await mountGateway(context);
    // Registered after the api's drain hook, so it runs once running agent runs finished (or
    // were ended with server_shutdown): those runs may still call tools on connected nodes.
    const apiDrained = new Promise<void>((resolve) =>
      context.app.addHook('preClose', () => resolve()),
    );
    const roles = [
      api,
      {
        name: 'gateway',
        close: async () => {
          gateway.stopAccepting();
          // Or when closing the HTTP server failed before reaching that hook (the same promise
          // the shutdown step awaits; it does not resolve while sockets are open).
          await Promise.race([apiDrained, context.app.close().catch(() => undefined)]);
          await gateway.close();
        },
      },
      await mountWorker(context, { sharedAgent: agent }),
    ];
    if (context.engines.db.dialect !== 'pglite') return roles;
    const tokens = new RefreshTokenService(context.engines.db, context.keys);
    const { audit } = context;
    const control = await startControlSocket(context.config.DATA_DIR, {
      async issue(userId) {
        const pair = await tokens.issuePair(userId);
        await audit.record(ISSUED_BY_CLI(userId));
        return pair;
      },
      async revokeUser(userId) {
        const count = await tokens.revokeAllForUser(userId);
        await context.revocations.revokeUser(userId);
        await audit.record(REVOKED_BY_CLI(userId, count));
        return { user_id: userId, refresh_tokens_revoked: count };
      },
      keyRotated: (key) => audit.record(KEY_ROTATED_BY_CLI(key)),
    });
    return [
      ...roles,
      {
        name: 'control-socket',
        close: () => new Promise<void>((resolve) => control.close(() => resolve())),
      },
    ];
  },
});
