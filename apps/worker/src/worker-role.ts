import type { MountedRole, ServiceContext } from '@agent-backend/runtime';

/**
 * Mounts the background worker. Foundation skeleton: it holds the engines (bus, durable store)
 * and serves health; queue processors (scheduled tasks, chat-platform events, ingestion)
 * arrive with the worker issue on the job port (`@agent-backend/jobs`).
 */
export async function mountWorker(context: ServiceContext): Promise<MountedRole> {
  context.logger.debug('worker mounted; no processors registered yet');
  return { name: 'worker', close: async () => {} };
}
