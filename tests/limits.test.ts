import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { testRedisUrl, textReply } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster, type SseClient } from './agent-helpers.js';
import { clusterLlm, heldRun as heldRunOn, refusal } from './limits-helpers.js';

/**
 * Per-user limits (docs/limits.md) across two API replicas sharing Redis: the deployment's total
 * stays within each limit, one user at a limit leaves another untouched, and run slots come
 * back on every end of a run, including the death of the replica running it.
 */
describe('per-user limits across replicas', () => {
  let cluster: AgentCluster;
  let redis: Redis;
  const url = (i: 0 | 1) => cluster.api[i]!.url;
  const llm = (modelName: string) => clusterLlm(cluster, modelName);
  /** The run slots `userId` holds, as the replicas record them in Redis. */
  const slotsHeld = (userId: string, pool: 'runs' | 'streams' = 'runs') =>
    redis.zcard(`${cluster.env.REDIS_KEY_PREFIX}limit:${pool}:${userId}`);
  const heldRun = (base: string, token: string, model: string) =>
    heldRunOn(cluster, base, token, model);

  beforeAll(async () => {
    cluster = await startAgentCluster({
      RATE_LIMIT_INVOKE_PER_MINUTE: '5',
      MAX_CONCURRENT_RUNS_PER_USER: '2',
      RUN_SLOT_LEASE_MS: '1500',
      AGENT_DISCONNECT_GRACE_MS: '300',
      AGENT_LLM_MAX_RETRIES: '0',
    });
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await redis?.quit();
    await cluster?.stop();
  });

  it('holds the invoke rate for the deployment, with 429, Retry-After and RateLimit fields', async () => {
    const alice = await cluster.token('rate-alice');
    const statuses: number[] = [];
    const refused: SseClient[] = [];
    for (let i = 0; i < 8; i++) {
      cluster.model.script('rate-a', [textReply('Hi.')]);
      const stream = await invoke(url(i % 2 === 0 ? 0 : 1), alice, {
        message: `hello ${i}`,
        llm_config: llm('rate-a'),
      });
      statuses.push(stream.response.status);
      if (stream.response.status === 429) refused.push(stream);
      else await stream.ended;
    }
    // Five for the deployment, not five a replica.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
    expect(cluster.model.requests('rate-a')).toHaveLength(5);
    const first = refused[0]!;
    expect(first.response.headers.get('ratelimit-policy')).toBe('"invoke";q=5;w=60');
    expect(first.response.headers.get('ratelimit')).toMatch(/^"invoke";r=0;t=\d+$/);
    const answer = await refusal(first);
    expect(answer.status).toBe(429);
    expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(answer.retryAfter)).toBeLessThanOrEqual(60);
    expect(answer.body.error).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'invoke', retry_after_seconds: expect.any(Number) },
    });

    // The rate is checked together with the run's admission: a refused request holds nothing.
    await vi.waitFor(async () => {
      expect(await slotsHeld('rate-alice')).toBe(0);
      expect(await slotsHeld('rate-alice', 'streams')).toBe(0);
    });

    // Another user is untouched.
    const bob = await cluster.token('rate-bob');
    cluster.model.script('rate-b', [textReply('Hello Bob.')]);
    const other = await invoke(url(1), bob, { message: 'hi', llm_config: llm('rate-b') });
    expect(other.response.status).toBe(200);
    expect(other.response.headers.get('ratelimit')).toMatch(/^"invoke";r=4;t=\d+$/);
    expect((await other.ended).at(-1)!.data.type).toBe('done');

    const metrics = await (await fetch(`${url(0)}/metrics`)).text();
    const refusals = [
      ...metrics.matchAll(/^agent_backend_rate_limited_total\{[^}]*limit="invoke"[^}]*\} (\d+)/gm),
    ];
    expect(refusals).toHaveLength(1);
    expect(Number(refusals[0]![1])).toBeGreaterThanOrEqual(1);
  });

  it('refuses a run over the concurrent runs of a user, on any replica, before the model', async () => {
    const carol = await cluster.token('slots-carol');
    const one = await heldRun(url(0), carol, 'slots-c1');
    const two = await heldRun(url(1), carol, 'slots-c2');
    cluster.model.script('slots-c3', [textReply('Never.')]);
    const three = await invoke(url(0), carol, { message: 'third', llm_config: llm('slots-c3') });
    const answer = await refusal(three);
    expect(answer.status).toBe(429);
    expect(answer.retryAfter).toBe('1');
    expect(answer.body.error).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'concurrent_runs', max: 2 },
    });
    expect(cluster.model.requests('slots-c3')).toHaveLength(0);

    // Another user runs while carol is at her limit.
    const dave = await cluster.token('slots-dave');
    cluster.model.script('slots-d', [textReply('Yes.')]);
    const daves = await invoke(url(0), dave, { message: 'hi', llm_config: llm('slots-d') });
    expect(daves.response.status).toBe(200);
    await daves.ended;

    // A finished run frees its slot.
    one.release();
    expect((await one.stream.ended).at(-1)!.data.type).toBe('done');
    await vi.waitFor(async () => expect(await slotsHeld('slots-carol')).toBe(1));
    const four = await invoke(url(0), carol, { message: 'fourth', llm_config: llm('slots-c3') });
    expect(four.response.status).toBe(200);
    expect((await four.ended).at(-1)!.data.type).toBe('done');
    two.release();
    await two.stream.ended;
    await vi.waitFor(async () => expect(await slotsHeld('slots-carol')).toBe(0));
  });

  it('counts one refusal per refused invoke: the rate when both the rate and the run slots refuse', async () => {
    /** `rate_limited_total` of replica 0 for `limit` (0 before the first). */
    const refusedOf = async (limit: string) => {
      const metrics = await (await fetch(`${url(0)}/metrics`)).text();
      const pattern = new RegExp(
        `^agent_backend_rate_limited_total\\{[^}]*limit="${limit}"[^}]*\\} (\\d+)`,
        'm',
      );
      return Number(metrics.match(pattern)?.[1] ?? 0);
    };
    const hank = await cluster.token('both-hank');
    const before = { runs: await refusedOf('concurrent_runs'), rate: await refusedOf('invoke') };
    const one = await heldRun(url(0), hank, 'both-h1');
    const two = await heldRun(url(0), hank, 'both-h2');
    const limits: unknown[] = [];
    // Points 3 to 5 of the minute: the run slots refuse; 6 and 7: both refuse, the rate answers.
    for (let i = 0; i < 5; i++) {
      const refused = await refusal(
        await invoke(url(0), hank, { message: 'more', llm_config: llm('both-h3') }),
      );
      expect(refused.status).toBe(429);
      limits.push((refused.body.error.details as { limit: string }).limit);
    }
    expect(limits).toEqual([
      'concurrent_runs',
      'concurrent_runs',
      'concurrent_runs',
      'invoke',
      'invoke',
    ]);
    expect(await refusedOf('concurrent_runs')).toBe(before.runs + 3);
    expect(await refusedOf('invoke')).toBe(before.rate + 2);
    one.release();
    two.release();
    await Promise.all([one.stream.ended, two.stream.ended]);
  });

  it('gives back what an invoke was admitted with when its body or session id is refused', async () => {
    const gina = await cluster.token('slots-gina');
    const invalid = await invoke(url(0), gina, { llm_config: llm('slots-g') });
    expect((await refusal(invalid)).body.error.code).toBe('invalid_request');
    const reserved = await invoke(url(1), gina, {
      message: 'mine now',
      session_id: 'chat:lark:oc_1',
      llm_config: llm('slots-g'),
    });
    expect((await refusal(reserved)).body.error.code).toBe('session_id_reserved');
    await vi.waitFor(async () => {
      expect(await slotsHeld('slots-gina')).toBe(0);
      expect(await slotsHeld('slots-gina', 'streams')).toBe(0);
    });
    // Two refusals did not take the two run slots she has.
    const one = await heldRun(url(0), gina, 'slots-g1');
    const two = await heldRun(url(1), gina, 'slots-g2');
    one.release();
    two.release();
    await Promise.all([one.stream.ended, two.stream.ended]);
  });

  it('has both slots free once a client has read the last event, on either replica', async () => {
    const fay = await cluster.token('slots-fay');
    // Four: the invoke rate here is five a minute.
    for (let i = 0; i < 4; i++) {
      const model = `slots-f${i}`;
      cluster.model.script(model, [
        i % 2 === 0 ? textReply('Done.') : { kind: 'error', status: 400, message: 'bad request' },
      ]);
      const run = await invoke(url(i % 2 === 0 ? 0 : 1), fay, {
        message: `run ${i}`,
        llm_config: llm(model),
      });
      expect(run.response.status).toBe(200);
      const events = await run.ended;
      expect(events.at(-1)!.data.type).toBe(i % 2 === 0 ? 'done' : 'error');
      // No waiting: the slots left with the last event, not after it.
      expect([await slotsHeld('slots-fay'), await slotsHeld('slots-fay', 'streams')]).toEqual([
        0, 0,
      ]);
    }
  });

  it('frees the slot of a run that failed and of a run cancelled by a disconnect', async () => {
    const erin = await cluster.token('slots-erin');
    cluster.model.script('slots-e1', [{ kind: 'error', status: 500, message: 'provider down' }]);
    const failed = await invoke(url(1), erin, { message: 'fail', llm_config: llm('slots-e1') });
    expect(failed.response.status).toBe(200);
    expect((await failed.ended).at(-1)!.data.type).toBe('error');
    await vi.waitFor(async () => expect(await slotsHeld('slots-erin')).toBe(0));

    const held = await heldRun(url(0), erin, 'slots-e2');
    expect(await slotsHeld('slots-erin')).toBe(1);
    const [request] = cluster.model.requests('slots-e2');
    held.stream.close();
    await cluster.model.waitForAbort(request!, 10_000);
    await vi.waitFor(async () => expect(await slotsHeld('slots-erin')).toBe(0), {
      timeout: 5_000,
    });
    held.release();
  });

  it("gives back a killed replica's slots within the lease", async () => {
    const frank = await cluster.token('slots-frank');
    const doomed = await cluster.startReplica('api-doomed');
    const one = await heldRun(doomed.url, frank, 'slots-f1');
    const two = await heldRun(doomed.url, frank, 'slots-f2');
    cluster.model.script('slots-f3', [textReply('Later.')]);
    const refused = await invoke(url(0), frank, { message: 'x', llm_config: llm('slots-f3') });
    expect(refused.response.status).toBe(429);
    await refused.response.body?.cancel();

    await doomed.stop('SIGKILL');
    await vi.waitFor(async () => expect(await slotsHeld('slots-frank')).toBe(0), {
      timeout: 10_000,
      interval: 100,
    });
    const after = await invoke(url(0), frank, { message: 'again', llm_config: llm('slots-f3') });
    expect(after.response.status).toBe(200);
    expect((await after.ended).at(-1)!.data.type).toBe('done');
    one.release();
    two.release();
  });
});
