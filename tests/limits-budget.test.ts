import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { testRedisUrl, textReply, toolCallsReply } from '@agent-backend/testing';
import { invoke, resume, startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { clusterLlm, heldRun, refusal } from './limits-helpers.js';

/** Tokens a day per user in this cluster: far above one short run, below one long answer. */
const BUDGET = 15_000;

/**
 * The daily token budget and the open-stream limit (docs/limits.md) across two API replicas
 * sharing Redis: a run that crosses the budget ends after that model request with
 * `budget_exceeded`, the next is refused on any replica, the usage and what remains are visible,
 * and another user is untouched; streams over the limit are refused before any model request
 * and their slots come back when they close.
 */
describe('token budgets and open streams across replicas', () => {
  let cluster: AgentCluster;
  let redis: Redis;
  const url = (i: 0 | 1) => cluster.api[i]!.url;
  const llm = (modelName: string) => clusterLlm(cluster, modelName);
  const usage = async (base: string, token: string) => {
    const response = await fetch(`${base}/api/usage`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(response.status).toBe(200);
    return (await response.json()) as {
      total: { prompt_tokens: number; completion_tokens: number };
      budget: { limit: number; used: number; remaining: number; day: string; resets_at: string };
    };
  };

  beforeAll(async () => {
    cluster = await startAgentCluster({
      TOKEN_BUDGET_PER_USER_PER_DAY: String(BUDGET),
      MAX_OPEN_STREAMS_PER_USER: '2',
      AGENT_DISCONNECT_GRACE_MS: '60000',
      AGENT_LLM_MAX_RETRIES: '0',
    });
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await redis?.quit();
    await cluster?.stop();
  });

  it('ends a run that crosses the budget after that model request, then refuses the next', async () => {
    const alice = await cluster.token('budget-alice');
    const before = await usage(url(1), alice);
    expect(before.budget).toMatchObject({ limit: BUDGET, used: 0, remaining: BUDGET });
    expect(before.budget.resets_at).toBe(
      new Date(Date.parse(before.budget.day) + 86_400_000).toISOString(),
    );

    // One model request whose answer alone is over the budget, and that calls a tool.
    cluster.model.script('budget-a', [
      toolCallsReply([{ name: 'write_todos', args: { todos: [] } }], { text: 'x'.repeat(20_000) }),
      textReply('Never asked.'),
    ]);
    const run = await invoke(url(0), alice, { message: 'long', llm_config: llm('budget-a') });
    expect(run.response.status).toBe(200);
    const events = await run.ended;
    expect(events.at(-1)!.data).toMatchObject({ type: 'error', code: 'budget_exceeded' });
    // The tool it called did not run, and no second model request was made.
    expect(events.some((e) => e.data.type === 'tool_call')).toBe(false);
    expect(cluster.model.requests('budget-a')).toHaveLength(1);
    // The text the user saw is kept in the conversation.
    expect(events.filter((e) => e.data.type === 'message_chunk').length).toBeGreaterThan(0);

    // Visible on the other replica: used past the budget, nothing remains.
    const after = await usage(url(1), alice);
    expect(after.budget.used).toBeGreaterThan(BUDGET);
    expect(after.budget.used).toBe(after.total.prompt_tokens + after.total.completion_tokens);
    expect(after.budget.remaining).toBe(0);

    // The next run is refused on either replica before any model request.
    cluster.model.script('budget-a2', [textReply('Never.')]);
    for (const i of [0, 1] as const) {
      const next = await invoke(url(i), alice, { message: 'again', llm_config: llm('budget-a2') });
      const answer = await refusal(next);
      expect(answer.status).toBe(429);
      expect(Number(answer.retryAfter)).toBeGreaterThan(0);
      expect(Number(answer.retryAfter)).toBeLessThanOrEqual(86_400);
      expect(answer.body.error).toMatchObject({
        code: 'budget_exceeded',
        details: { limit: 'token_budget', budget: BUDGET, used: after.budget.used },
      });
    }
    expect(cluster.model.requests('budget-a2')).toHaveLength(0);

    // Another user is untouched, and sees their own count.
    const bob = await cluster.token('budget-bob');
    cluster.model.script('budget-b', [textReply('Hello Bob.')]);
    const bobs = await invoke(url(1), bob, { message: 'hi', llm_config: llm('budget-b') });
    expect(bobs.response.status).toBe(200);
    const done = (await bobs.ended).at(-1)!.data as {
      type: string;
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    expect(done.type).toBe('done');
    const spent = done.usage.prompt_tokens + done.usage.completion_tokens;
    expect((await usage(url(0), bob)).budget).toMatchObject({
      used: spent,
      remaining: BUDGET - spent,
    });

    const metrics = await (await fetch(`${url(0)}/metrics`)).text();
    expect(metrics).toMatch(
      /^agent_backend_rate_limited_total\{[^}]*limit="token_budget"[^}]*\} [1-9]/m,
    );
  });

  it('refuses a stream over the open streams of a user, and frees its slot when it closes', async () => {
    const carol = await cluster.token('streams-carol');
    const streamsOpen = () =>
      redis.zcard(`${cluster.env.REDIS_KEY_PREFIX}limit:streams:streams-carol`);
    const one = await heldRun(cluster, url(0), carol, 'streams-c1', { session_id: 's-one' });
    const two = await heldRun(cluster, url(1), carol, 'streams-c2', { session_id: 's-two' });
    expect(await streamsOpen()).toBe(2);

    cluster.model.script('streams-c3', [textReply('Never.')]);
    const three = await invoke(url(0), carol, { message: 'x', llm_config: llm('streams-c3') });
    const answer = await refusal(three);
    expect(answer.status).toBe(429);
    expect(answer.body.error).toMatchObject({
      code: 'rate_limited',
      details: { limit: 'open_streams', max: 2 },
    });
    expect(cluster.model.requests('streams-c3')).toHaveLength(0);
    // A resumed stream counts too.
    const resumed = await resume(url(1), carol, 's-one');
    expect((await refusal(resumed)).status).toBe(429);

    // Another user streams while carol is at her limit.
    const dave = await cluster.token('streams-dave');
    cluster.model.script('streams-d', [textReply('Yes.')]);
    const daves = await invoke(url(1), dave, { message: 'hi', llm_config: llm('streams-d') });
    expect(daves.response.status).toBe(200);
    await daves.ended;

    // Closing a stream frees its slot at once (its run goes on within the grace period), and
    // the run can be watched again from the other replica.
    one.stream.close();
    await vi.waitFor(async () => expect(await streamsOpen()).toBe(1));
    const again = await resume(url(1), carol, 's-one');
    expect(again.response.status).toBe(200);
    one.release();
    expect((await again.ended).at(-1)!.data.type).toBe('done');
    two.release();
    expect((await two.stream.ended).at(-1)!.data.type).toBe('done');
    await vi.waitFor(async () => expect(await streamsOpen()).toBe(0));
  });
});
