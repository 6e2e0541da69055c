import { startService } from '@agent-backend/runtime';
import { mountGateway } from './gateway-role.js';

await startService('gateway', {
  migrate: false,
  databaseReadiness: false,
  // The gateway enqueues no job: BullMQ stays unloaded unless something does.
  jobsAtFirstUse: true,
  mount: async (context) => [await mountGateway(context)],
});
