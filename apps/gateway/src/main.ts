import { startService } from '@agent-backend/runtime';
import { mountGateway } from './gateway-role.js';

await startService('gateway', {
  migrate: false,
  databaseReadiness: false,
  mount: async (context) => [await mountGateway(context)],
});
