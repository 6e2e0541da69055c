import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import {
  startScriptedModel,
  testRedisUrl,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { startCountedApi, type CountedApi } from '../bench/support/counted-api.js';
import { accessToken, invoke } from './agent-helpers.js';
import { keyFiles } from './helpers.js';

const OFF = {
  RATE_LIMIT_INVOKE_PER_MINUTE: '0',
  RATE_LIMIT_WRITES_PER_MINUTE: '0',
  MAX_CONCURRENT_RUNS_PER_USER: '0',
  MAX_OPEN_STREAMS_PER_USER: '0',
  TOKEN_BUDGET_PER_USER_PER_DAY: '0',
};
const ON = {
  RATE_LIMIT_INVOKE_PER_MINUTE: '10000',
  RATE_LIMIT_WRITES_PER_MINUTE: '10000',
  MAX_CONCURRENT_RUNS_PER_USER: '100',
  MAX_OPEN_STREAMS_PER_USER: '100',
  TOKEN_BUDGET_PER_USER_PER_DAY: '1000000000',
};

/**
 * What the limits cost in Redis round trips per request (docs/limits.md): two API processes on
 * one Redis, limits off and on, each reaching Redis through a proxy that counts its round trips
 * (bench/support/redis-counter.ts). Rate classes are leased, so a request of a limited route
 * rarely asks Redis; an invoke adds its admission and nothing more (its final answer's tokens go
 * out with the run's last writes), and every token is still counted.
 */
describe('the round trips the limits add', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  const started: CountedApi[] = [];
  let off: CountedApi;
  let on: CountedApi;

  const start = async (name: string, env: Record<string, string>) => {
    const running = await startCountedApi(`limits-rt-${name}`, keys, env);
    started.push(running);
    return running;
  };

  beforeAll(async () => {
    model = await startScriptedModel();
    [off, on] = await Promise.all([start('off', OFF), start('on', ON)]);
  });
  afterAll(async () => {
    for (const running of started) await running.stop();
    await model?.close();
  });

  const llm = (modelName: string) => ({
    baseUrl: model.baseUrl,
    apiKey: 'sk-test',
    modelName,
  });
  /** Round trips per call of `call`, run `n` times one after another. */
  const roundTrips = async (running: typeof off, n: number, call: () => Promise<void>) => {
    const before = running.counter.counts().roundTrips;
    for (let i = 0; i < n; i++) await call();
    // What a request started after its answer (a slot release, the run log) reaches Redis.
    await new Promise((resolve) => setTimeout(resolve, 300));
    return (running.counter.counts().roundTrips - before) / n;
  };
  const run = async (running: typeof off, token: string, name: string) => {
    model.script(name, [textReply('A short answer.', 3)]);
    const client = await invoke(running.service.url, token, {
      message: 'Hi',
      llm_config: llm(name),
    });
    const events = await client.ended;
    expect(events.at(-1)!.data.type).toBe('done');
  };

  it('adds one round trip to an invoke with the rate, slots and token budget on', async () => {
    const token = await accessToken(keys.privateKey, 'rt-alice');
    for (const running of [off, on]) await run(running, token, 'rt-warm'); // warm-up
    const offTrips = await roundTrips(off, 8, () => run(off, token, 'rt-off'));
    const onTrips = await roundTrips(on, 8, () => run(on, token, 'rt-on'));
    // The admission (rate, budget, run and stream slot together); before, the final answer's
    // tokens were a write of their own: 2.
    expect(onTrips - offTrips).toBeLessThan(1.4);
  });

  it('asks Redis for a rate class far less than once a request', async () => {
    const token = await accessToken(keys.privateKey, 'rt-bob');
    const remove = (running: typeof off) => async () => {
      const response = await fetch(
        `${running.service.url}/api/memories/00000000-0000-4000-8000-000000000000`,
        { method: 'DELETE', headers: { authorization: `Bearer ${token}` } },
      );
      expect(response.status).toBe(404);
      if (running === on)
        expect(response.headers.get('ratelimit')).toMatch(/^"writes";r=\d+;t=\d+$/);
    };
    const offTrips = await roundTrips(off, 40, remove(off));
    const onTrips = await roundTrips(on, 40, remove(on));
    // A lease of 20 units: two calls for 40 requests (one each before leases).
    expect(onTrips - offTrips).toBeLessThan(0.3);
  });

  it('counts every token of a run, its final answer included, with the last writes before `done`', async () => {
    const token = await accessToken(keys.privateKey, 'rt-carol');
    // What the replica sends Redis, in the order Redis runs it (a script's own commands left out).
    const monitor = await new Redis(testRedisUrl()).monitor();
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua' && args.some((arg) => arg.startsWith(on.prefix))) seen.push(args);
    });
    model.script('rt-tokens', [
      toolCallsReply([{ name: 'write_todos', args: { todos: [] } }], { text: 'First.' }),
      textReply('The final answer, counted with the last writes.', 3),
    ]);
    const client = await invoke(on.service.url, token, {
      message: 'Two turns',
      llm_config: llm('rt-tokens'),
    });
    const done = (await client.ended).at(-1)!.data as {
      type: string;
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    expect(done.type).toBe('done');
    const response = await fetch(`${on.service.url}/api/usage`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const { budget } = (await response.json()) as { budget: { used: number } };
    expect(budget.used).toBe(done.usage.prompt_tokens + done.usage.completion_tokens);
    expect(model.requests('rt-tokens')).toHaveLength(2);

    // The final answer's tokens left in one write with the session's release, after the run
    // was recorded as ended (its turn record deleted), not as a write of their own.
    const named = (part: string) => (c: string[]) => c.some((arg) => arg.includes(part));
    // The usage report's read of the counter: the last command of the test.
    await vi.waitFor(() => expect(named('limit:tokens:rt-carol:')(seen.at(-1) ?? [])).toBe(true));
    monitor.disconnect();
    const lastAdd = seen.findLastIndex(
      (c) => c[0] === 'evalsha' && named('limit:tokens:rt-carol:')(c),
    );
    expect(lastAdd).toBeGreaterThan(seen.findLastIndex(named('agent:run-turn:')));
    expect(seen[lastAdd + 1]).toEqual([
      'get',
      expect.stringContaining('agent:session-lease:rt-carol'),
    ]);
  });

  it('counts the tokens of a final answer that the run then ends in an error on', async () => {
    const token = await accessToken(keys.privateKey, 'rt-dave');
    // An answer with no text, no tool call and no finish reason: an error after its tokens.
    model.script('rt-empty', [{ kind: 'stream', pieces: [{ text: '' }] }]);
    const client = await invoke(on.service.url, token, {
      message: 'Say nothing',
      llm_config: llm('rt-empty'),
    });
    const last = (await client.ended).at(-1)!.data as { type: string; code?: string };
    expect(last).toMatchObject({ type: 'error', code: 'llm_bad_response' });
    const [request] = model.requests('rt-empty');
    // The scripted model reports the prompt's characters as its tokens (no completion here).
    const prompt = JSON.stringify(request!.body.messages).length;
    const response = await fetch(`${on.service.url}/api/usage`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const { budget } = (await response.json()) as { budget: { used: number } };
    expect(budget.used).toBe(prompt);
  });
});
