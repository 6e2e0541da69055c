/** Request/reply part of the bus contract; see `describeBusContract`. */
import { expect, it } from 'vitest';
import type { Bus } from './bus.js';
import { RawJson } from './envelope.js';
import {
  BusClosedError,
  BusError,
  BusNoResponderError,
  BusRemoteError,
  BusTimeoutError,
} from './errors.js';

export interface BusTestCluster {
  /** Nodes that hear each other. */
  readonly nodes: readonly Bus[];
  /** Puts a raw string on the wire where subscribers of `channel` read, bypassing the encoder. */
  injectRaw(channel: string, payload: string): Promise<void>;
  /** Closes the nodes and whatever else the factory opened. */
  dispose(): Promise<void>;
}

/** Nodes of a fresh cluster plus the errors they reported; disposed after each test. */
export interface ContractContext {
  setup(count?: number): Promise<Bus[]>;
  readonly errors: Error[];
  readonly cluster: () => BusTestCluster;
}

const never = () => new Promise<never>(() => undefined);

export function describeRequestContract(ctx: ContractContext): void {
  it('answers a request with the responder result', async () => {
    const [a, b] = await ctx.setup(3);
    const seen: string[] = [];
    await b!.respond('double', (m, meta) => {
      seen.push(meta.from);
      return { n: (m as { n: number }).n * 2 };
    });
    expect(await a!.request('double', { n: 21 }, { timeoutMs: 15_000 })).toEqual({ n: 42 });
    expect(seen).toEqual([a!.nodeId]);
  });

  it('answers with a RawJson reply as JSON.parse of its text, escapes and non-ASCII kept', async () => {
    const [a, b] = await ctx.setup(2);
    const text =
      '{"response":{"text":"\\u00e9 – 🌍","n":[1,{"x":null}]},"big":"' + 'x'.repeat(300_000) + '"}';
    await b!.respond('raw', () => new RawJson(text));
    expect(await a!.request('raw', {}, { timeoutMs: 15_000 })).toEqual(JSON.parse(text));
    expect(ctx.errors).toEqual([]);
  });

  it('matches many concurrent requests from several nodes to their replies', async () => {
    const [a, b, c] = await ctx.setup(3);
    await b!.respond('echo', async (m) => {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20));
      return m;
    });
    const calls = [a!, c!].flatMap((node) =>
      Array.from({ length: 50 }, (_, i) => ({ node, body: `${node.nodeId}:${i}` })),
    );
    const replies = await Promise.all(
      calls.map(({ node, body }) => node.request('echo', body, { timeoutMs: 15_000 })),
    );
    expect(replies).toEqual(calls.map((call) => call.body));
  });

  it('rejects with BusTimeoutError at the deadline', async () => {
    const [a, b] = await ctx.setup(2);
    await b!.respond('slow', never);
    const err = await a!.request('slow', 1, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusTimeoutError);
    expect(err).toMatchObject({ code: 'BUS_TIMEOUT', channel: 'slow', timeoutMs: 100 });
  });

  it('fails fast with BusNoResponderError, long before the deadline', async () => {
    const [a, b, c] = await ctx.setup(3);
    await b!.subscribe('lonely', () => undefined);
    const started = Date.now();
    const err = await a!.request('lonely', 1, { timeoutMs: 20_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BusNoResponderError);
    expect(Date.now() - started).toBeLessThan(10_000);
    await c!.respond('gone', () => 1);
    await c!.close();
    await expect(a!.request('gone', 1, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(
      BusNoResponderError,
    );
  });

  it("propagates the responder's error code and message", async () => {
    const [a, b] = await ctx.setup(2);
    await b!.respond('fails', (m) => {
      if (m === 'coded') throw Object.assign(new Error('tool broke'), { code: 'TOOL_FAILED' });
      throw new Error('plain');
    });
    const coded = await a!
      .request('fails', 'coded', { timeoutMs: 15_000 })
      .catch((e: unknown) => e);
    expect(coded).toBeInstanceOf(BusRemoteError);
    expect(coded).toMatchObject({ code: 'TOOL_FAILED', message: 'tool broke', from: b!.nodeId });
    await expect(a!.request('fails', 'plain', { timeoutMs: 15_000 })).rejects.toMatchObject({
      code: 'REMOTE_ERROR',
      message: 'plain',
    });
  });

  it('rejects with the abort reason when the signal aborts', async () => {
    const [a, b] = await ctx.setup(2);
    await b!.respond('abort', never);
    const controller = new AbortController();
    const pending = a!.request('abort', 1, { timeoutMs: 20_000, signal: controller.signal });
    const reason = new Error('user cancelled');
    setTimeout(() => controller.abort(reason), 20);
    await expect(pending).rejects.toBe(reason);
    await expect(
      a!.request('abort', 1, { timeoutMs: 20_000, signal: AbortSignal.abort(reason) }),
    ).rejects.toBe(reason);
  });

  it('rejects pending requests with BusClosedError on close', async () => {
    const [a, b] = await ctx.setup(2);
    await b!.respond('pending', never);
    const pending = a!.request('pending', 1, { timeoutMs: 20_000 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const outcome = expect(pending).rejects.toBeInstanceOf(BusClosedError);
    await a!.close();
    await outcome;
  });

  it('allows one responder per channel and node, again after unsubscribe', async () => {
    const [a, b] = await ctx.setup(2);
    const first = await b!.respond('one', () => 'first');
    await expect(b!.respond('one', () => 'second')).rejects.toBeInstanceOf(BusError);
    await first.unsubscribe();
    await first.unsubscribe();
    await expect(a!.request('one', 1, { timeoutMs: 20_000 })).rejects.toBeInstanceOf(
      BusNoResponderError,
    );
    await b!.respond('one', () => 'again');
    expect(await a!.request('one', 1, { timeoutMs: 15_000 })).toBe('again');
  });

  it('rejects a request without a usable deadline', async () => {
    const [a] = await ctx.setup(1);
    await expect(a!.request('x', 1, { timeoutMs: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(a!.request('x', 1, { timeoutMs: Number.NaN })).rejects.toBeInstanceOf(RangeError);
  });
}
