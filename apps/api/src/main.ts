import { startService } from '@agent-backend/runtime';
import { mountApi } from './api-role.js';

await startService('api', { migrate: true, mount: async (context) => [await mountApi(context)] });
