import { startTcpProxy, testRedisUrl, uniquePrefix, type TcpProxy } from '@agent-backend/testing';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { closeRedis, createRedis, type Redis } from './connection.js';
import { ReplylessPublisher, type ReplylessPublisherOptions } from './replyless-publisher.js';

describe('ReplylessPublisher', () => {
  const url = new URL(testRedisUrl());
  let proxy: TcpProxy;
  /** Bytes Redis sent down each proxied connection, in the order accepted. */
  let downs: string[][];
  /** Bytes Redis sent down the publisher's connection (the last one accepted). */
  const down = (): string => downs.at(-1)!.join('');
  const oks = (): number => down().split('+OK\r\n').length - 1;
  let source: Redis;
  let subscriber: Redis;
  let channel: string;
  let received: string[];
  let resent: Array<[string, string]>;
  const open: ReplylessPublisher[] = [];

  beforeEach(async () => {
    downs = [];
    proxy = await startTcpProxy(
      { host: url.hostname, port: Number(url.port || 6379) },
      {
        observe: () => {
          const chunks: string[] = [];
          downs.push(chunks);
          return { down: (chunk) => void chunks.push(chunk.toString()) };
        },
      },
    );
    const proxied = new URL(url);
    proxied.port = String(proxy.port);
    source = createRedis(proxied.toString(), { name: 'test-replyless-source', onError: () => {} });
    subscriber = createRedis(url.toString(), { name: 'test-replyless-sub' });
    channel = uniquePrefix('replyless');
    received = [];
    resent = [];
    subscriber.on('message', (_channel: string, message: string) => void received.push(message));
    await subscriber.subscribe(channel);
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((publisher) => publisher.close()));
    await Promise.all([closeRedis(source), closeRedis(subscriber)]);
    await proxy.close();
  });

  async function publisher(
    options: Partial<ReplylessPublisherOptions> = {},
  ): Promise<ReplylessPublisher> {
    const publisher = new ReplylessPublisher(source, {
      name: 'test-replyless',
      resend: (c, p) => void resent.push([c, p]),
      onError: () => {},
      ...options,
    });
    open.push(publisher);
    await vi.waitFor(() => expect(publisher.publish(channel, 'ready?')).toBe(true));
    await vi.waitFor(() => expect(received).toContain('ready?'));
    received = [];
    return publisher;
  }

  it('publishes without Redis answering each message, then confirms what it wrote', async () => {
    const p = await publisher({ confirmAfterMs: 300 });
    // `+OK` to `CLIENT SETNAME`, to the first `CLIENT REPLY ON` (the permission check at
    // ready) and to the confirmation of 'ready?': nothing else comes back.
    await vi.waitFor(() => expect(p.unconfirmed).toBe(0), { timeout: 2_000 });
    await vi.waitFor(() => expect(oks()).toBe(3));
    const before = down();
    const messages = Array.from({ length: 50 }, (_, i) => `m${i} ✓`);
    for (const m of messages) expect(p.publish(channel, m)).toBe(true);
    await vi.waitFor(() => expect(received).toEqual(messages));
    expect(down()).toBe(before);
    // Within confirmAfterMs of the first write, Redis answers the next confirmation: one `+OK`.
    await vi.waitFor(() => expect(down()).toBe(`${before}+OK\r\n`), { timeout: 2_000 });
    // The proxy sees the `+OK` before the publisher has read it.
    await vi.waitFor(() => expect(p.unconfirmed).toBe(0));
    // Confirmed: a drop now has nothing to send again.
    proxy.setMode('drop');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(resent).toEqual([]);
  });

  it('hands what a dropped connection had not confirmed to resend, in order', async () => {
    const p = await publisher({ confirmAfterMs: 60_000 });
    proxy.setMode('stall');
    for (const m of ['a', 'b', 'c']) expect(p.publish(channel, m)).toBe(true);
    expect(p.unconfirmed).toBe(4);
    proxy.setMode('drop');
    await vi.waitFor(() =>
      expect(resent).toEqual([
        [channel, 'ready?'],
        [channel, 'a'],
        [channel, 'b'],
        [channel, 'c'],
      ]),
    );
    // While the connection is down, publish declines (the caller publishes counted instead).
    expect(p.publish(channel, 'd')).toBe(false);
    expect(received).toEqual([]);
    proxy.setMode('forward');
    await vi.waitFor(() => expect(p.publish(channel, 'e')).toBe(true), { timeout: 10_000 });
    await vi.waitFor(() => expect(received).toEqual(['e']));
  });

  it('reopens a connection whose confirmation goes unanswered, and resends', async () => {
    const p = await publisher({ confirmAfterMs: 50, confirmTimeoutMs: 300 });
    await vi.waitFor(() => expect(p.unconfirmed).toBe(0));
    proxy.setMode('stall');
    expect(p.publish(channel, 'held')).toBe(true);
    // Nothing is dropped by the network: the publisher itself gives up on the silent connection.
    await vi.waitFor(() => expect(resent).toEqual([[channel, 'held']]), { timeout: 5_000 });
    proxy.setMode('forward');
    await vi.waitFor(() => expect(p.publish(channel, 'after')).toBe(true), { timeout: 10_000 });
    await vi.waitFor(() => expect(received).toContain('after'));
    expect(proxy.accepted).toBeGreaterThanOrEqual(3); // source, the first connection, the second
  });

  it('declines every message, and says so once, where an ACL refuses CLIENT REPLY', async () => {
    const user = uniquePrefix('noreply').replace(/[^a-z0-9]/gi, '');
    const admin = createRedis(url.toString(), { name: 'test-replyless-admin' });
    await admin.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-client|reply');
    const limited = new URL(url);
    limited.username = user;
    limited.password = 'pw';
    const restricted = createRedis(limited.toString(), { name: 'test-replyless-acl' });
    try {
      const errors: Error[] = [];
      const p = new ReplylessPublisher(restricted, {
        name: 'test-replyless',
        resend: () => {},
        onError: (err) => errors.push(err),
      });
      open.push(p);
      await vi.waitFor(() => expect(errors).toHaveLength(1));
      expect(errors[0]!.message).toMatch(/^replies are published counted: NOPERM/);
      expect(p.publish(channel, 'x')).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(p.publish(channel, 'y')).toBe(false);
      expect(errors).toHaveLength(1);
    } finally {
      await closeRedis(restricted);
      await admin.call('ACL', 'DELUSER', user);
      await closeRedis(admin);
    }
  });

  it('declines before its connection is ready and after close', async () => {
    const p = new ReplylessPublisher(source, { name: 'test-replyless', resend: () => {} });
    open.push(p);
    expect(p.publish(channel, 'early')).toBe(false);
    await vi.waitFor(() => expect(p.publish(channel, 'x')).toBe(true));
    await p.close();
    expect(p.publish(channel, 'late')).toBe(false);
    await vi.waitFor(() => expect(received).toEqual(['x']));
  });
});
