/**
 * Background runs on worker replicas, over PostgreSQL and Redis: a background run holds one of
 * its user's `MAX_CONCURRENT_RUNS_PER_USER` slots while it runs on a worker (over the limit:
 * 429 before anything is queued), gives it back when it ends, and a SIGKILLed worker's slot is
 * free again within `RUN_SLOT_LEASE_MS`; a worker's SIGTERM drains its runs: a run that ends
 * during the drain ends there, a run still going is handed over to another worker, which
 * completes it from its last step.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  testRedisUrl,
  textReply,
  toolCallsReply,
  type ServiceProcess,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster, type SseEvent } from './agent-helpers.js';
import { eventually, invokeBackground, joinRun, seqs, startWorker } from './durable-helpers.js';

const isType = (type: string) => (e: SseEvent) => e.data.type === type;

describe('background runs on worker replicas: run slots and drain', () => {
  let cluster: AgentCluster;
  let redis: Redis;
  const workers: ServiceProcess[] = [];
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-bg-workers-77',
    modelName,
  });
  const url = (i: number) => cluster.api[i]!.url;
  const runStatus = (runId: string) => cluster.runStatus(runId);
  /** Where the lease of a run's slot ends (Redis ms), as its holders renew it; null: not held. */
  const slotEnd = async (userId: string, runId: string) => {
    const key = `${cluster.env.REDIS_KEY_PREFIX}limit:runs:${userId}`;
    const score = await redis.zscore(key, `run:${runId}`);
    return score === null ? null : Number(score);
  };
  const redisNow = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  /**
   * Resolves once the slot outlived the lease it had at the 202 (`endAtAccepted`) and was renewed
   * meanwhile: the API replica left it then, so only the worker holding it renews it.
   */
  const renewedByWorker = async (userId: string, runId: string, endAtAccepted: number | null) => {
    expect(endAtAccepted).not.toBeNull();
    await eventually(async () => {
      const end = await slotEnd(userId, runId);
      return end !== null && end > endAtAccepted! && (await redisNow()) > endAtAccepted!;
    });
  };
  /** The worker that took `runId` (it logs the run as continuing there). */
  const holderOf = (runId: string) =>
    eventually(async () =>
      workers.find((w) =>
        w.stdout.some((line) => line.includes(runId) && line.includes('run continues')),
      ),
    );

  beforeAll(async () => {
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      MAX_CONCURRENT_RUNS_PER_USER: '1',
      RUN_SLOT_LEASE_MS: '1500',
      AGENT_SESSION_LEASE_MS: '1500',
      AGENT_TAKEOVER_CHECK_MS: '300',
      SHUTDOWN_TIMEOUT_MS: '4000',
    });
    workers.push(await startWorker(cluster.env, 'worker-a'));
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await redis?.quit();
    await Promise.all(workers.map((w) => w.stop('SIGKILL')));
    await cluster?.stop();
  });

  it('holds a run slot while it runs on the worker: another run of the user gets 429 until it ends', async () => {
    const token = await cluster.token('ana');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('slot-held', [
      { kind: 'stream', pieces: [{ text: 'Working, ' }, { waitFor: gate }, { finish: 'stop' }] },
    ]);
    cluster.model.script('slot-next', [textReply('Next.')]);
    const accepted = await invokeBackground(url(0), token, {
      message: 'go',
      llm_config: llm('slot-held'),
    });
    expect(accepted.status).toBe(202);
    const endAtAccepted = await slotEnd('ana', accepted.body.run_id);
    const joined = await joinRun(url(1), token, accepted.body.run_id);
    await joined.waitFor(isType('message_chunk'));
    // Past the lease the API replica left it with: the worker holds the slot.
    await renewedByWorker('ana', accepted.body.run_id, endAtAccepted);

    const refused = await invokeBackground(url(1), token, {
      message: 'another',
      llm_config: llm('slot-next'),
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({
      error: { code: 'rate_limited', details: { limit: 'concurrent_runs', max: 1 } },
    });
    const streamed = await invoke(url(0), token, {
      message: 'another',
      llm_config: llm('slot-next'),
    });
    expect(streamed.response.status).toBe(429);
    // Nothing was queued or recorded for the refused invokes.
    const rows = await cluster.sql<{ count: string }>(
      "SELECT count(*) FROM agent_runs WHERE user_id = 'ana'",
    );
    expect(rows.map((r) => Number(r.count))).toEqual([1]);

    release();
    expect((await joined.ended).at(-1)!.data.type).toBe('done');
    // Freed when the run ended on the worker.
    const next = await invokeBackground(url(1), token, {
      message: 'next',
      llm_config: llm('slot-next'),
    });
    expect(next.status).toBe(202);
    expect((await (await joinRun(url(0), token, next.body.run_id)).ended).at(-1)!.data.type).toBe(
      'done',
    );
  });

  it('hands a run over on SIGTERM after the drain: another worker completes it from its last step', async () => {
    workers.push(await startWorker(cluster.env, 'worker-b'));
    const token = await cluster.token('ben');
    cluster.model.script('drain-handover', [
      toolCallsReply([
        { id: 'call_t', name: 'write_todos', args: { todos: [{ content: 'Before' }] } },
      ]),
      // Never answers: the run is still going when the drain ends.
      { kind: 'hang' },
      textReply('Finished on the other worker.'),
    ]);
    const accepted = await invokeBackground(url(0), token, {
      message: 'go',
      llm_config: llm('drain-handover'),
    });
    expect(accepted.status).toBe(202);
    const runId = accepted.body.run_id;
    const joined = await joinRun(url(1), token, runId);
    await joined.waitFor(isType('tool_result'));
    await cluster.model.waitForRequests('drain-handover', 2);
    const first = (await holderOf(runId))!;
    const other = workers.find((w) => w !== first)!;
    await first.stop('SIGTERM');
    workers.splice(workers.indexOf(first), 1);

    const events = await joined.ended;
    expect(events.map((e) => e.data.type)).toEqual([
      'session',
      'tool_call',
      'todos',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(seqs(events)).toEqual(events.map((_, i) => i + 1));
    expect(await runStatus(runId)).toBe('done');
    expect(other.stdout.some((line) => line.includes(runId))).toBe(true);
    // Continued from the stored step: the first model turn and its tool call were not repeated.
    const requests = cluster.model.requests('drain-handover');
    expect(requests).toHaveLength(3);
    const third = requests[2]!.body.messages!;
    expect(third.filter((m) => m.role === 'tool')).toHaveLength(1);
    expect(third.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_t' });
    expect(first.stdout.join('\n')).not.toContain('server_shutdown');
  });

  it('lets a run finish during the drain on the worker that runs it', async () => {
    const token = await cluster.token('dee');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('drain-finish', [
      { kind: 'stream', pieces: [{ text: 'Almost, ' }, { waitFor: gate }, { text: 'done.' }] },
    ]);
    const accepted = await invokeBackground(url(0), token, {
      message: 'go',
      llm_config: llm('drain-finish'),
    });
    const runId = accepted.body.run_id;
    const joined = await joinRun(url(1), token, runId);
    await joined.waitFor(isType('message_chunk'));
    const holder = (await holderOf(runId))!;
    const stopping = holder.stop('SIGTERM');
    await eventually(async () =>
      holder.stdout.some((line) => line.includes('letting background runs finish')),
    );
    // A run queued while the only worker drains waits for another worker: the draining one
    // takes no job (nor receives it only to queue it again).
    cluster.model.script('drain-queued', [textReply('On the next worker.')]);
    const queued = await invokeBackground(url(0), await cluster.token('eve'), {
      message: 'go',
      llm_config: llm('drain-queued'),
    });
    expect(queued.status).toBe(202);
    release();
    await stopping;
    workers.splice(workers.indexOf(holder), 1);
    const next = await startWorker(cluster.env, 'worker-d');
    workers.push(next);
    expect((await holderOf(queued.body.run_id))!).toBe(next);
    await eventually(async () => (await runStatus(queued.body.run_id)) === 'done');
    expect(holder.stdout.some((line) => line.includes(queued.body.run_id))).toBe(false);
    expect(await redis.keys(`${cluster.env.REDIS_KEY_PREFIX}*forwarded*`)).toEqual([]);
    const events = await joined.ended;
    expect(events.map((e) => e.data.type)).toEqual([
      'session',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(holder.stdout.some((line) => line.includes('run handed over'))).toBe(false);
    expect(await runStatus(runId)).toBe('done');
  });

  it("frees a SIGKILLed worker's run slot within the lease", async () => {
    workers.push(await startWorker(cluster.env, 'worker-c'));
    const token = await cluster.token('cy');
    cluster.model.script('slot-killed', [{ kind: 'hang' }]);
    cluster.model.script('slot-after', [textReply('After.')]);
    const accepted = await invokeBackground(url(0), token, {
      message: 'go',
      llm_config: llm('slot-killed'),
    });
    expect(accepted.status).toBe(202);
    const endAtAccepted = await slotEnd('cy', accepted.body.run_id);
    const holder = (await holderOf(accepted.body.run_id))!;
    await renewedByWorker('cy', accepted.body.run_id, endAtAccepted);
    expect(
      (await invokeBackground(url(1), token, { message: 'x', llm_config: llm('slot-after') }))
        .status,
    ).toBe(429);
    // Every worker is gone: nobody takes the run over, only the slot's lease can free it.
    await Promise.all(workers.splice(0).map((w) => w.stop('SIGKILL')));
    expect(holder.stdout.length).toBeGreaterThan(0);
    const admitted = await eventually(async () => {
      const stream = await invoke(url(1), token, { message: 'x', llm_config: llm('slot-after') });
      if (stream.response.status === 429) return undefined;
      return stream;
    });
    expect(admitted.response.status).toBe(200);
    expect((await admitted.ended).at(-1)!.data.type).toBe('done');
  });
});
