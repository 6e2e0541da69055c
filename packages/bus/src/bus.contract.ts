/**
 * The behaviour every bus adapter must share, run against the in-process and the Redis adapter
 * with several nodes. Adapter-only checks live in `bus.<adapter>.test.ts`.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { BusHandler, BusMessageMeta } from './bus.js';
import {
  describeRequestContract,
  type BusTestCluster,
  type ContractContext,
} from './bus-request.contract.js';
import { BusClosedError, BusHandlerError, BusMalformedMessageError } from './errors.js';
import { RawJson } from './envelope.js';

export type MakeBusNodes = (
  count: number,
  options: { onError: (err: Error) => void },
) => Promise<BusTestCluster>;

/** Collects what a handler receives. */
export function collector(): { handler: BusHandler; messages: unknown[]; metas: BusMessageMeta[] } {
  const messages: unknown[] = [];
  const metas: BusMessageMeta[] = [];
  return { messages, metas, handler: (m, meta) => void (messages.push(m), metas.push(meta)) };
}

/** Waits until `values` ends with the marker, so anything delivered twice would already be seen. */
export async function untilMarker(values: unknown[], marker = 'end'): Promise<void> {
  await vi.waitFor(() => expect(values.at(-1)).toBe(marker), { timeout: 5_000, interval: 5 });
}

export function describeBusContract(name: string, makeNodes: MakeBusNodes): void {
  describe(`bus contract: ${name}`, () => {
    let current: BusTestCluster | undefined;
    const errors: Error[] = [];
    const ctx: ContractContext = {
      errors,
      async setup(count = 3) {
        current = await makeNodes(count, { onError: (err) => errors.push(err) });
        return [...current.nodes];
      },
      cluster: () => {
        if (!current) throw new Error('call setup() first');
        return current;
      },
    };
    afterEach(async () => {
      await current?.dispose();
      current = undefined;
      errors.length = 0;
    });

    it('fans a message out to every node, once each, with the publisher id', async () => {
      const nodes = await ctx.setup(3);
      const got = nodes.map(() => collector());
      await Promise.all(nodes.map((node, i) => node.subscribe('fan', got[i]!.handler)));
      expect(await nodes[1]!.publish('fan', { n: 1 })).toBe(3);
      await nodes[1]!.publish('fan', 'end');
      for (const c of got) {
        await untilMarker(c.messages);
        expect(c.messages).toEqual([{ n: 1 }, 'end']);
        expect(c.metas[0]).toEqual({ channel: 'fan', from: nodes[1]!.nodeId });
      }
    });

    it("delivers to the publisher's own subscriptions exactly once, and counts nodes", async () => {
      const [a] = await ctx.setup(3);
      const first = collector();
      const second = collector();
      await a!.subscribe('self', first.handler);
      await a!.subscribe('self', second.handler);
      expect(await a!.publish('self', 'x')).toBe(1);
      await a!.publish('self', 'end');
      await untilMarker(first.messages);
      await untilMarker(second.messages);
      expect(first.messages).toEqual(['x', 'end']);
      expect(second.messages).toEqual(['x', 'end']);
    });

    it('keeps order per channel and publisher', async () => {
      const [a, b] = await ctx.setup(3);
      const got = collector();
      await b!.subscribe('order', got.handler);
      const sent = Array.from({ length: 200 }, (_, i) => i);
      await Promise.all([...sent, 'end'].map((n) => a!.publish('order', n)));
      await untilMarker(got.messages);
      expect(got.messages).toEqual([...sent, 'end']);
    });

    it('unsubscribes idempotently and delivers nothing after', async () => {
      const [a, b, c] = await ctx.setup(3);
      const gone = collector();
      const stays = collector();
      const sub = await b!.subscribe('unsub', gone.handler);
      await c!.subscribe('unsub', stays.handler);
      await sub.unsubscribe();
      await sub.unsubscribe();
      expect(await a!.publish('unsub', 'x')).toBe(1);
      await a!.publish('unsub', 'end');
      await untilMarker(stays.messages);
      expect(gone.messages).toEqual([]);
    });

    it('publish resolves to 0 when nobody listens', async () => {
      const [a, b] = await ctx.setup(3);
      expect(await a!.publish('nobody', 'x')).toBe(0);
      const sub = await b!.subscribe('nobody', () => undefined);
      await sub.unsubscribe();
      expect(await a!.publish('nobody', 'x')).toBe(0);
    });

    it('carries JSON: what arrives is what JSON.stringify would send', async () => {
      const [a, b] = await ctx.setup(2);
      const got = collector();
      await b!.subscribe('json', got.handler);
      await a!.publish('json', { at: new Date(0), gone: undefined, list: [undefined] });
      await a!.publish('json', 'end');
      await untilMarker(got.messages);
      expect(got.messages[0]).toEqual({ at: '1970-01-01T00:00:00.000Z', list: [null] });
      await expect(a!.publish('json', { big: 1n })).rejects.toThrow(TypeError);
    });

    it('carries RawJson text as it is: what arrives is what JSON.parse of the text returns', async () => {
      const [a, b] = await ctx.setup(2);
      const got = collector();
      await b!.subscribe('raw', got.handler);
      // Escapes, spacing and key order JSON.stringify would not write; non-ASCII text.
      const text = ' { "b" : [1, 2.50] , "a" : "\\u00e9 é 🌍 \\u2028 \\n" } ';
      await a!.publish('raw', new RawJson(text));
      await a!.publish('raw', 'end');
      await untilMarker(got.messages);
      expect(got.messages[0]).toEqual(JSON.parse(text));
      expect(got.messages[0]).toEqual({ b: [1, 2.5], a: 'é é 🌍 \u2028 \n' });
    });

    it('drops malformed payloads and reports them, never calling subscribers', async () => {
      const [a, b] = await ctx.setup(2);
      const got = collector();
      await b!.subscribe('bad', got.handler);
      for (const raw of ['not json', '[1]', '{"v":1,"k":"msg"}', '{"v":2,"k":"msg","from":"x"}']) {
        await ctx.cluster().injectRaw('bad', raw);
      }
      await a!.publish('bad', 'end');
      await untilMarker(got.messages);
      expect(got.messages).toEqual(['end']);
      await vi.waitFor(
        () =>
          expect(ctx.errors.filter((e) => e instanceof BusMalformedMessageError)).toHaveLength(4),
        { timeout: 10_000 },
      );
    });

    it('reports a throwing subscriber and still delivers to the others', async () => {
      const [a, b] = await ctx.setup(2);
      const got = collector();
      await b!.subscribe('throws', () => {
        throw new Error('boom');
      });
      await b!.subscribe('throws', async () => Promise.reject(new Error('async boom')));
      await b!.subscribe('throws', got.handler);
      await a!.publish('throws', 'end');
      await untilMarker(got.messages);
      await vi.waitFor(
        () => expect(ctx.errors.filter((e) => e instanceof BusHandlerError)).toHaveLength(2),
        { timeout: 10_000 },
      );
    });

    it('rejects every method after close, and close is idempotent', async () => {
      const [a] = await ctx.setup(1);
      await Promise.all([a!.close(), a!.close()]);
      await a!.close();
      await expect(a!.publish('c', 1)).rejects.toBeInstanceOf(BusClosedError);
      await expect(a!.subscribe('c', () => undefined)).rejects.toBeInstanceOf(BusClosedError);
      await expect(a!.respond('c', () => 1)).rejects.toBeInstanceOf(BusClosedError);
      await expect(a!.request('c', 1, { timeoutMs: 100 })).rejects.toBeInstanceOf(BusClosedError);
    });

    it('stops delivering to a closed node and leaves unsubscribe harmless', async () => {
      const [a, b] = await ctx.setup(2);
      const got = collector();
      const sub = await b!.subscribe('closed', got.handler);
      await b!.close();
      await sub.unsubscribe();
      expect(await a!.publish('closed', 'x')).toBe(0);
      expect(got.messages).toEqual([]);
    });

    describeRequestContract(ctx);
  });
}
