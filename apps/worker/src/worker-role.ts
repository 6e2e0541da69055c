import {
  AGENT_RUNS_QUEUE,
  createAgent,
  processAgentRuns,
  startTakeoverSweep,
  type Agent,
  type AgentOptions,
} from '@agent-backend/agent';
import { userWebChannel } from '@agent-backend/node-rpc';
import {
  createNotifier,
  createSmtpEmailSender,
  type ChatPlatformNotifier,
} from '@agent-backend/notify';
import { CHAT_MESSAGE_QUEUE, larkClients, larkNotifier } from '@agent-backend/chat-platform';
import { KB_INGEST_QUEUE } from '@agent-backend/knowledge';
import type { MountedRole, ServiceContext } from '@agent-backend/runtime';
import { SCHEDULED_TASKS_QUEUE } from '@agent-backend/scheduler';
import { defaultRunModel } from './default-model.js';
import { createRunnerTaskAgent, type TaskAgent } from './task-agent.js';
import { createTaskProcessor } from './task-processor.js';
import { processChatMessages } from './chat-messages.js';
import { processKnowledgeIngestion } from './kb-ingest.js';
import { startRetentionSweep } from './retention-sweep.js';
import { startSandboxSweep } from './sandbox-sweep.js';
import { startErasureSweep } from './erasure-sweep.js';
import { serviceUserData } from '@agent-backend/user-data';
import { startScheduleWatch } from './schedule-watch.js';

export interface WorkerOptions {
  /** Replaces the default agent (the agent runtime on `DEFAULT_LLM_*`). */
  agent?: TaskAgent;
  /** The chat-platform client; absent: chat notifications are logged and skipped. */
  chat?: ChatPlatformNotifier;
  /** Passed to the agent factory (extra tool sources, for an embedder's own capability). */
  agentOptions?: AgentOptions;
  /**
   * The process's agent, when the composition root built it for several roles (the
   * all-in-one); the caller closes it. Absent: the worker builds its own from `agentOptions`.
   */
  sharedAgent?: Agent;
}

/**
 * Mounts the background worker: reconciles the task schedules from the durable store (so a
 * Redis that lost its data loses no task, at start and whenever it happens later), then
 * processes the scheduled-tasks, agent-runs (background runs, resumes, takeovers; see
 * docs/agent.md), chat-message and knowledge-ingestion queues. Runs in the worker
 * process and in the all-in-one (on the in-process job queue).
 */
export async function mountWorker(
  context: ServiceContext,
  options: WorkerOptions = {},
): Promise<MountedRole> {
  const { config, engines, logger } = context;
  const email = config.SMTP_URL
    ? createSmtpEmailSender({ url: config.SMTP_URL, from: config.EMAIL_FROM })
    : undefined;
  const notifier = createNotifier({
    publishInApp: (userId, message) => engines.bus.publish(userWebChannel(userId), message),
    ...(email ? { email } : {}),
    chat: options.chat ?? larkNotifier(larkClients(config)),
    onSkip: (info) => logger.warn(info, 'notification channel skipped'),
  });
  // One agent for scheduled runs and chat replies, assembled like the api's invoke runs.
  const runAgent = options.sharedAgent ?? createAgent(context, options.agentOptions);
  const agent =
    options.agent ??
    createRunnerTaskAgent({
      runner: runAgent.runner,
      llm: defaultRunModel(config),
    });
  // Reconciles now, and again whenever Redis lost the schedules (schedule-watch.ts).
  const stopScheduleWatch = await startScheduleWatch(context);
  await engines.jobs.process(
    SCHEDULED_TASKS_QUEUE,
    createTaskProcessor({
      db: engines.db,
      jobs: engines.jobs,
      logger,
      agent,
      notifier,
      workerId: config.instanceId,
      confirmTtlMs: config.SCHEDULED_TASK_CONFIRM_TTL_MS,
      leaseMs: config.JOBS_LOCK_MS,
    }),
    { concurrency: 4 },
  );
  // Background runs, suspended runs resumed, runs taken over from a replica that died.
  const agentRuns = await processAgentRuns(
    {
      engines,
      runner: runAgent.runner,
      logger,
      settings: {
        disconnectGraceMs: runAgent.settings.disconnectGraceMs,
        ...(runAgent.settings.suspendAfterMs !== undefined
          ? { suspendAfterMs: runAgent.settings.suspendAfterMs }
          : {}),
        handOverOnDrain: runAgent.settings.takeover,
      },
      // Each run holds its user's run slot here, as it did on the API replica (docs/limits.md).
      runSlot: (userId, runId) => context.limits.runSlot(userId, runId),
    },
    config.AGENT_RUN_JOBS_CONCURRENCY,
  );
  const stopTakeovers = runAgent.settings.takeover
    ? startTakeoverSweep(
        { engines, runner: runAgent.runner, logger },
        {
          intervalMs: runAgent.settings.takeoverCheckMs,
          leaseTtlMs: config.AGENT_SESSION_LEASE_MS,
        },
      )
    : async () => {};
  // Chat-platform messages: their conversations belong to the chat, so no node tools.
  const stopChatInboxWatch = await processChatMessages(context, runAgent.runner);
  await processKnowledgeIngestion(context); // kb-ingest: docs/knowledge-base.md
  const stopSweep = startSandboxSweep(context, runAgent.sandboxes); // docs/sandbox.md
  const stopRetention = startRetentionSweep(context, runAgent.sandboxes.providers); // docs/operations.md#retention
  // Erasures a crashed process left half done are finished here (docs/operations.md), the
  // user's runs stopped first wherever they run, as the api's erasures do.
  const stopErasures = await startErasureSweep(
    context,
    serviceUserData(context, runAgent.sandboxes.providers, (userId) =>
      agentRuns.stopper.stopUser(userId),
    ),
  );
  // Queue depths at each scrape, from the queues this worker processes (BullMQ only).
  const bullmq = engines.bullmq;
  if (bullmq) {
    context.metrics.jobs.watchDepth(
      [SCHEDULED_TASKS_QUEUE, CHAT_MESSAGE_QUEUE, KB_INGEST_QUEUE, AGENT_RUNS_QUEUE],
      async (queue) => (await bullmq()).counts(queue),
    );
  }
  return {
    name: 'worker',
    close: async () => {
      // Like the API's drain: runs may finish in the first three quarters of the shutdown;
      // those still going are handed over to another worker (with takeovers on), not ended.
      await agentRuns.drain(Math.floor(config.SHUTDOWN_TIMEOUT_MS * 0.75));
      await Promise.all([
        stopSweep(),
        stopRetention(),
        stopErasures(),
        stopScheduleWatch(),
        stopChatInboxWatch(),
        stopTakeovers(),
      ]);
      // After the erasure sweep: an erasure stops the user's runs through it.
      await agentRuns.close();
      await Promise.all([email?.close(), options.sharedAgent ? undefined : runAgent.close()]);
    },
  };
}
