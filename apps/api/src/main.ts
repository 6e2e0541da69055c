import { startService } from '@agent-backend/runtime';
import { mountApi } from './api-role.js';

await startService('api', {
  migrate: true,
  // Only some requests enqueue (background runs, ingestion, scheduled tasks, chat webhooks,
  // erasures), all of them for later work: the first of them opens BullMQ, an idle replica never
  // does (docs/BENCHMARKS.md, "Footprint").
  jobsAtFirstUse: true,
  mount: async (context) => [await mountApi(context)],
});
