/**
 * The worker SIGKILLed in the middle of a scheduled run and in the middle of a
 * chat-platform message (the scripted model holds the answer open, so the kill lands mid-run),
 * then a new worker started, while node tool calls go on. The same setups as
 * tests/scheduled-tasks.test.ts and tests/chat-platform.test.ts, counted like every fault.
 *
 * Semantics shown: both are at-least-once executions with an exactly-once effect. The agent runs
 * again on the new worker (the model is asked twice: counted as executions, and the run's
 * `attempts` says 2); the effect is once: one `succeeded` run row and one in-app notification
 * per scheduled occurrence, one reply in the chat per message.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply } from '@agent-backend/testing';
import { openSocket, type TestSocket } from '../ws-client.js';
import {
  countReplies,
  countTask,
  dueIn,
  useFaultCluster,
  syncTask,
  taskExecutions,
} from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { startOwnRedis, type OwnRedis } from './redis-server.js';
import { expectNoHarm } from './scenario.js';
import { sleep, Tally, until } from './tally.js';
import { deliverUntilAcked, toolCallTraffic } from './traffic.js';

const MODEL = 'faults-kill-model';

describe('worker SIGKILLed mid-run', () => {
  const profile = faultProfile();
  const kills = profile.name === 'long' ? 5 : 1;
  let redis: OwnRedis;
  let web: TestSocket;

  const faults = useFaultCluster('worker-kill', async (own) => {
    redis = own(await startOwnRedis());
    return {
      redisUrl: redis.url,
      workerModel: MODEL,
      // A dead worker's hold on a chat's session ends within 5 s rather than 30.
      env: { AGENT_SESSION_LEASE_MS: '5000' },
    };
  });
  // Registered after the cluster's hooks: runs after it started, and before it stops.
  beforeAll(async () => {
    web = await openSocket(
      faults.fc.cluster.wsUrl(0, '/ws/web', {
        user_id: 'task-user',
        token: await faults.fc.cluster.token('task-user'),
      }),
    );
  });
  afterAll(() => {
    web?.ws.terminate();
  });

  /** Holds the next worker answer open until the worker dies; the retry gets `answer`. */
  const holdNextAnswer = (answer: string) => {
    faults.fc.model.script(MODEL, [
      { kind: 'stream', pieces: [{ text: 'never finished' }, { waitFor: new Promise(() => {}) }] },
      textReply(answer),
    ]);
  };
  /** Waits until the worker's model is asked about `marker`, then kills the worker, starts another. */
  const killMidRun = async (marker: string, n: number) => {
    await until(
      () =>
        faults.fc.model
          .requests(MODEL)
          .some((r) => JSON.stringify(r.body.messages ?? []).includes(marker)),
      30_000,
      `the worker's run for ${marker}`,
    );
    const worker = faults.fc.cluster.workers.at(-1)!;
    await worker.stop('SIGKILL');
    const killedAt = Date.now();
    await faults.fc.cluster.startReplica('worker', `worker-restarted-${n}`);
    return killedAt;
  };

  it('SIGKILL mid scheduled run and mid chat message', async () => {
    const tally = new Tally(
      'worker-sigkill',
      'the worker SIGKILLed mid scheduled run and mid chat message, a new worker started',
    );
    const stop = new AbortController();
    const traffic = toolCallTraffic(
      tally,
      faults.fc.cluster,
      faults.fc.fleet,
      profile.toolCallsPerSecond / 2,
      stop.signal,
    );
    const recoveries: number[] = [];
    const taskIds: string[] = [];
    const messageIds: Array<string | undefined> = [];
    for (let n = 0; n < kills; n++) {
      // A scheduled run.
      const taskId = `kill-task-${n}-${Date.now().toString(36)}`;
      taskIds.push(taskId);
      holdNextAnswer(`task ${taskId} done after the crash`);
      expect(
        (await syncTask(faults.fc.cluster, taskId, { run_mode: 'auto', ...dueIn(1) })).status,
      ).toBe(200);
      let killedAt = await killMidRun(`run ${taskId}`, 2 * n);
      await until(
        async () =>
          faults.fc.model
            .requests(MODEL)
            .filter((r) => JSON.stringify(r.body.messages ?? []).includes(`run ${taskId}`))
            .length >= 2,
        60_000,
        'the retried scheduled run',
      );
      recoveries.push(Date.now() - killedAt);

      // A chat message.
      const eventId = `kill-chat-${n}-${Date.now().toString(36)}`;
      holdNextAnswer(`reply to ${eventId} after the crash`);
      messageIds.push(
        await deliverUntilAcked(tally, faults.fc.cluster, eventId, `oc_kill_${n}`, 30_000),
      );
      killedAt = await killMidRun(`message ${eventId}`, 2 * n + 1);
      await until(
        () =>
          faults.fc.lark.messages.some((m) => m.kind === 'reply' && m.target === `om_${eventId}`),
        60_000,
        'the retried chat reply',
      );
      recoveries.push(Date.now() - killedAt);
    }
    stop.abort();
    await traffic;

    for (const taskId of taskIds) await countTask(tally, faults.fc, taskId, 30_000);
    await countReplies(tally, faults.fc, messageIds, 30_000);
    // The effects once: one in-app result per occurrence, one reply per message (counted above).
    await sleep(1_000);
    const notified = tally.counts('in-app results');
    for (const taskId of taskIds) {
      notified.made++;
      const n = web.received.filter(
        (f) => f.type === 'scheduled_task_result' && f.task_id === taskId,
      ).length;
      if (n === 0) notified.lost++;
      else tally.add('in-app results', { kind: 'succeeded' });
      if (n > 1) notified.doubled++;
    }
    // At-least-once executions: each killed run ran again, and the run row says so.
    const executions = taskIds.map((id) => taskExecutions(faults.fc.model, id, MODEL));
    tally.note(
      `agent executions per scheduled occurrence: ${JSON.stringify(executions)} (attempts 2 each: at-least-once execution, one run row, one notification)`,
    );
    const chatExecutions = messageIds.map(
      (id) =>
        faults.fc.model
          .requests(MODEL)
          .filter((r) => JSON.stringify(r.body.messages ?? []).includes(`message ${id?.slice(3)}`))
          .length,
    );
    tally.note(
      `agent executions per chat message: ${JSON.stringify(chatExecutions)} (one reply each)`,
    );
    tally.recoveryMs = Math.max(...recoveries);
    tally.note(
      `recovery per kill (kill to the retried run's model request or reply), ms: ${JSON.stringify(recoveries)}`,
    );
    expectNoHarm(tally);
    // Killed mid-run, each ran again: two executions, one effect.
    expect(executions).toEqual(taskIds.map(() => 2));
    expect(chatExecutions).toEqual(messageIds.map(() => 2));
  });
});
