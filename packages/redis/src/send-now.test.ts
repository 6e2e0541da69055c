import { testRedisUrl, uniquePrefix } from '@agent-backend/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { closeRedis, createRedis } from './connection.js';
import { sendNow } from './send-now.js';

describe('sendNow', () => {
  const redis = createRedis(testRedisUrl(), {
    name: 'send-now-test',
    redisOptions: { enableAutoPipelining: true },
  });
  const prefix = uniquePrefix('send-now');
  afterAll(async () => {
    await redis.del(`${prefix}list`, `${prefix}alone`, `${prefix}turn`);
    await closeRedis(redis);
  });

  it('writes a command at once when nothing waits in the auto-pipeline', async () => {
    await redis.ping();
    const reply = sendNow(redis, 'rpush', [`${prefix}alone`, 'a']);
    // Not queued for the pipeline's setImmediate: written to the socket in this turn.
    expect(redis.autoPipelineQueueSize).toBe(0);
    expect(await reply).toBe(1);
    // A publish nobody listens to answers its receiver count, as `publish` does.
    expect(Number(await sendNow(redis, 'publish', [`${prefix}nobody`, 'x']))).toBe(0);
  });

  it("writes one command a turn at once; the turn's later ones join the auto-pipeline", async () => {
    await redis.ping();
    const key = `${prefix}turn`;
    const first = sendNow(redis, 'rpush', [key, 'a']);
    expect(redis.autoPipelineQueueSize).toBe(0);
    // A busy turn sends its commands in one write, not one each.
    const second = sendNow(redis, 'rpush', [key, 'b']);
    const third = sendNow(redis, 'rpush', [key, 'c']);
    expect(redis.autoPipelineQueueSize).toBe(2);
    expect(await Promise.all([first, second, third])).toEqual([1, 2, 3]);
    expect(await redis.lrange(key, 0, -1)).toEqual(['a', 'b', 'c']);
    // The next turn writes its first command at once again.
    await new Promise((resolve) => setImmediate(resolve));
    const next = sendNow(redis, 'rpush', [key, 'd']);
    expect(redis.autoPipelineQueueSize).toBe(0);
    expect(await next).toBe(4);
    // `everyCommand`: each one at once while nothing is queued (the bus's publishes).
    sendNow(redis, 'rpush', [key, 'e'], { everyCommand: true });
    const last = sendNow(redis, 'rpush', [key, 'f'], { everyCommand: true });
    expect(redis.autoPipelineQueueSize).toBe(0);
    expect(await last).toBe(6);
  });

  it('never overtakes a command queued before it on the same connection', async () => {
    await redis.ping();
    const key = `${prefix}list`;
    const first = redis.rpush(key, 'first');
    expect(redis.autoPipelineQueueSize).toBe(1);
    const second = sendNow(redis, 'rpush', [key, 'second']);
    await Promise.all([first, second]);
    expect(await redis.lrange(key, 0, -1)).toEqual(['first', 'second']);
  });

  it('settles with the server error of a failed command', async () => {
    await expect(sendNow(redis, 'publish', ['only-one-argument'])).rejects.toThrow(
      /wrong number of arguments/,
    );
  });
});
