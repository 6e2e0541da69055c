import { startService } from '@agent-backend/runtime';
import { mountWorker } from './worker-role.js';

await startService('worker', {
  migrate: true,
  mount: async (context) => [await mountWorker(context)],
});
