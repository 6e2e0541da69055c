/**
 * The behaviour every presence adapter must share. Adapter-only checks live in
 * `presence.<adapter>.test.ts`. TTLs are short and expiry is awaited by polling.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PresenceClosedError } from './errors.js';
import type { Presence, PresenceOptions, PresenceUpsert } from './presence.js';

/** Creates a presence store with an empty namespace; the suite closes it after each test. */
export type MakePresence = (options: PresenceOptions) => Promise<Presence>;

const poll = { timeout: 5_000, interval: 10 };
const long = { nodeTtlMs: 60_000, replicaTtlMs: 60_000 };

export function node(
  nodeId: string,
  replicaId = 'r1',
  extra: Partial<PresenceUpsert> = {},
): PresenceUpsert {
  return { userId: 'u1', nodeId, nodeType: 'desktop', replicaId, data: { name: nodeId }, ...extra };
}

export function describePresenceContract(name: string, makePresence: MakePresence): void {
  describe(`presence contract: ${name}`, () => {
    const open: Presence[] = [];
    const make = async (options: PresenceOptions = long) => {
      const presence = await makePresence(options);
      open.push(presence);
      return presence;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((p) => p.close()));
    });

    it('upserts a node, stamping times, and reads it back as JSON copies', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      const before = Date.now();
      const stored = await p.upsertNode(
        node('n1', 'r1', { data: { at: new Date(0), gone: undefined } }),
      );
      expect(stored).toMatchObject({
        userId: 'u1',
        nodeId: 'n1',
        nodeType: 'desktop',
        replicaId: 'r1',
      });
      expect(stored.data).toEqual({ at: '1970-01-01T00:00:00.000Z' });
      expect(stored.connectedAt).toBe(stored.lastSeenAt);
      expect(Math.abs(stored.lastSeenAt - before)).toBeLessThan(60_000);
      const read = await p.getNode('u1', 'n1');
      expect(read).toEqual(stored);
      (read!.data as Record<string, unknown>).at = 'mutated';
      expect((await p.getNode('u1', 'n1'))!.data).toEqual(stored.data);
      expect(await p.getNode('u1', 'missing')).toBeNull();
      expect(await p.getNode('nobody', 'n1')).toBeNull();
    });

    it('lists a user’s live nodes, oldest connection first, and replaces on upsert', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      await p.heartbeatReplica('r2');
      await p.upsertNode(node('b', 'r1', { connectedAt: 3_000 }));
      await p.upsertNode(node('a', 'r1', { connectedAt: 2_000 }));
      await p.upsertNode(node('c', 'r2', { connectedAt: 2_000 }));
      await p.upsertNode({ ...node('other'), userId: 'u2' });
      expect((await p.listNodes('u1')).map((e) => e.nodeId)).toEqual(['a', 'c', 'b']);
      await p.upsertNode(node('b', 'r2', { connectedAt: 1_000, nodeType: 'extension' }));
      const [first] = await p.listNodes('u1');
      expect(first).toMatchObject({
        nodeId: 'b',
        replicaId: 'r2',
        nodeType: 'extension',
        connectedAt: 1_000,
      });
      expect(await p.listNodes('nobody')).toEqual([]);
    });

    it('touches a node: refreshes lastSeenAt and merges the patch into data', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      const stored = await p.upsertNode(node('n1', 'r1', { data: { name: 'n1', os: 'linux' } }));
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(await p.touchNode('u1', 'n1', { os: undefined, version: 2 })).toBe(true);
      expect(await p.touchNode('u1', 'n1')).toBe(true);
      const touched = await p.getNode('u1', 'n1');
      expect(touched!.data).toEqual({ name: 'n1', version: 2 });
      expect(touched!.connectedAt).toBe(stored.connectedAt);
      expect(touched!.lastSeenAt).toBeGreaterThan(stored.lastSeenAt);
      expect(await p.touchNode('u1', 'missing')).toBe(false);
    });

    it('keeps a later connection of the same instance against an older one upserted late', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      await p.heartbeatReplica('r2');
      const second = { instance: 'dev-a', seq: 2 };
      const kept = await p.upsertNode(node('n1', 'r2', { connection: second, data: { v: 2 } }));
      expect(kept.connection).toEqual(second);
      // The first attempt of the same instance, processed late (another replica or the same).
      for (const replica of ['r1', 'r2']) {
        const late = { instance: 'dev-a', seq: 1 };
        const answer = await p.upsertNode(node('n1', replica, { connection: late, data: {} }));
        expect(answer).toEqual(kept);
        expect(await p.getNode('u1', 'n1')).toEqual(kept);
      }
      // The same connection again, and a touch with a patch, keep its order.
      expect(
        await p.upsertNode(node('n1', 'r2', { connection: second, data: { v: 3 } })),
      ).toMatchObject({ connection: second, data: { v: 3 } });
      expect(await p.touchNode('u1', 'n1', { w: 1 })).toBe(true);
      expect(await p.getNode('u1', 'n1')).toMatchObject({
        connection: second,
        data: { v: 3, w: 1 },
      });
      // Another instance, or a connection that names no order, replaces as before.
      const other = { instance: 'dev-b', seq: 0 };
      expect(await p.upsertNode(node('n1', 'r1', { connection: other }))).toMatchObject({
        replicaId: 'r1',
        connection: other,
      });
      const plain = await p.upsertNode(node('n1', 'r2'));
      expect(plain.replicaId).toBe('r2');
      expect(plain.connection).toBeUndefined();
      // An old order against an entry without one is written too.
      expect(
        await p.upsertNode(node('n1', 'r1', { connection: { instance: 'dev-a', seq: 0 } })),
      ).toMatchObject({ replicaId: 'r1', connection: { instance: 'dev-a', seq: 0 } });
    });

    it('leaves an entry of a later connection of the same instance to it on a touch', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      await p.heartbeatReplica('r2');
      const later = { instance: 'dev-a', seq: 2 };
      await p.upsertNode(node('n1', 'r2', { connection: later, data: { status: 'online' } }));
      const before = await p.getNode('u1', 'n1');
      // The connection it superseded, still open elsewhere (its replace command lost).
      const stale = { instance: 'dev-a', seq: 1 };
      expect(await p.touchNode('u1', 'n1', { status: 'busy' }, stale)).toBe(false);
      expect(await p.touchNode('u1', 'n1', undefined, stale)).toBe(false);
      expect(await p.getNode('u1', 'n1')).toEqual(before);
      // The connection itself, another instance, or a toucher naming no order: as before.
      expect(await p.touchNode('u1', 'n1', { w: 1 }, later)).toBe(true);
      expect(await p.touchNode('u1', 'n1', undefined, { instance: 'dev-b', seq: 0 })).toBe(true);
      expect(await p.touchNode('u1', 'n1', { v: 2 })).toBe(true);
      expect(await p.getNode('u1', 'n1')).toMatchObject({
        connection: later,
        data: { status: 'online', w: 1, v: 2 },
      });
    });

    it('removes a node only for its owner, so a late cleanup spares a reconnected node', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      await p.heartbeatReplica('r2');
      await p.upsertNode(node('n1', 'r1'));
      await p.upsertNode(node('n1', 'r2'));
      expect(await p.removeNode('u1', 'n1', { replicaId: 'r1' })).toBe(false);
      expect((await p.getNode('u1', 'n1'))?.replicaId).toBe('r2');
      expect(await p.removeNode('u1', 'n1', { replicaId: 'r2' })).toBe(true);
      expect(await p.removeNode('u1', 'n1', { replicaId: 'r2' })).toBe(false);
      await p.upsertNode(node('n2', 'r1'));
      expect(await p.removeNode('u1', 'n2')).toBe(true);
      expect(await p.listNodes('u1')).toEqual([]);
    });

    it('expires a node nobody touches, and keeps one that is touched', async () => {
      const p = await make({ nodeTtlMs: 300, replicaTtlMs: 60_000 });
      await p.heartbeatReplica('r1');
      await p.upsertNode(node('idle'));
      await p.upsertNode(node('busy'));
      await vi.waitFor(async () => {
        expect(await p.touchNode('u1', 'busy')).toBe(true);
        expect(await p.getNode('u1', 'idle')).toBeNull();
      }, poll);
      expect((await p.listNodes('u1')).map((e) => e.nodeId)).toEqual(['busy']);
      expect(await p.touchNode('u1', 'idle')).toBe(false);
      expect(await p.removeNode('u1', 'idle')).toBe(false);
      await vi.waitFor(async () => expect(await p.listNodes('u1')).toEqual([]), poll);
    });

    it('hides the nodes of a replica that stopped heartbeating, and lists live replicas', async () => {
      const p = await make({ nodeTtlMs: 60_000, replicaTtlMs: 300 });
      await p.heartbeatReplica('dies');
      await p.heartbeatReplica('lives');
      await p.upsertNode(node('ghost', 'dies'));
      await p.upsertNode(node('real', 'lives'));
      expect(await p.liveReplicas()).toEqual(['dies', 'lives']);
      await vi.waitFor(async () => {
        await p.heartbeatReplica('lives');
        expect(await p.liveReplicas()).toEqual(['lives']);
      }, poll);
      await p.heartbeatReplica('lives');
      expect((await p.listNodes('u1')).map((e) => e.nodeId)).toEqual(['real']);
      expect(await p.getNode('u1', 'ghost')).toBeNull();
      expect(await p.touchNode('u1', 'ghost')).toBe(false);
    });

    it('gives a replica that stalled past its deadline its nodes back when it heartbeats again', async () => {
      const p = await make({ nodeTtlMs: 60_000, replicaTtlMs: 300 });
      await p.heartbeatReplica('stalls');
      await p.upsertNode(node('kept', 'stalls'));
      await vi.waitFor(async () => expect(await p.liveReplicas()).toEqual([]), poll);
      // Readers while the replica looks dead see nothing, but must not delete its nodes.
      expect(await p.listNodes('u1')).toEqual([]);
      expect(await p.getNode('u1', 'kept')).toBeNull();
      await p.heartbeatReplica('stalls');
      expect((await p.listNodes('u1')).map((e) => e.nodeId)).toEqual(['kept']);
    });

    it('tells a replica whether it was live before its beat: not on its first, after removal or expiry', async () => {
      const p = await make({ replicaTtlMs: 300 });
      expect(await p.heartbeatReplica('r1')).toBe(false);
      expect(await p.heartbeatReplica('r1')).toBe(true);
      expect(await p.heartbeatReplica('r2')).toBe(false);
      await p.removeReplica('r1');
      expect(await p.heartbeatReplica('r1')).toBe(false);
      await vi.waitFor(async () => expect(await p.liveReplicas()).toEqual([]), poll);
      expect(await p.heartbeatReplica('r2')).toBe(false);
      expect(await p.heartbeatReplica('r2')).toBe(true);
    });

    it('hides nodes of a removed or never-seen replica at once', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      await p.heartbeatReplica('r2');
      await p.upsertNode(node('n1', 'r1'));
      await p.upsertNode(node('n2', 'r2'));
      await p.upsertNode(node('n3', 'never'));
      await p.removeReplica('r1');
      expect(await p.liveReplicas()).toEqual(['r2']);
      expect((await p.listNodes('u1')).map((e) => e.nodeId)).toEqual(['n2']);
    });

    it('removes every entry of one user at once, live or hidden, and no other user’s', async () => {
      const p = await make();
      await p.heartbeatReplica('r1');
      await p.upsertNode(node('n1', 'r1'));
      await p.upsertNode(node('n2', 'gone-replica'));
      await p.upsertNode(node('n3', 'r1', { userId: 'u2' }));
      expect(await p.removeUser('u1')).toBe(2);
      expect(await p.listNodes('u1')).toEqual([]);
      expect(await p.getNode('u1', 'n2')).toBeNull();
      expect((await p.listNodes('u2')).map((n) => n.nodeId)).toEqual(['n3']);
      expect(await p.removeUser('u1')).toBe(0);
    });

    it('rejects empty ids and bad TTLs', async () => {
      const p = await make();
      await expect(p.heartbeatReplica('')).rejects.toBeInstanceOf(TypeError);
      await expect(p.upsertNode(node(''))).rejects.toBeInstanceOf(TypeError);
      await expect(p.removeNode('u1', 'n1', { replicaId: '' })).rejects.toBeInstanceOf(TypeError);
      await expect(make({ nodeTtlMs: 0 })).rejects.toBeInstanceOf(RangeError);
    });

    it('rejects every method after close, and close is idempotent', async () => {
      const p = await make();
      await Promise.all([p.close(), p.close()]);
      await p.close();
      const closed = PresenceClosedError;
      await expect(p.heartbeatReplica('r1')).rejects.toBeInstanceOf(closed);
      await expect(p.removeReplica('r1')).rejects.toBeInstanceOf(closed);
      await expect(p.liveReplicas()).rejects.toBeInstanceOf(closed);
      await expect(p.upsertNode(node('n1'))).rejects.toBeInstanceOf(closed);
      await expect(p.touchNode('u1', 'n1')).rejects.toBeInstanceOf(closed);
      await expect(p.removeNode('u1', 'n1')).rejects.toBeInstanceOf(closed);
      await expect(p.getNode('u1', 'n1')).rejects.toBeInstanceOf(closed);
      await expect(p.listNodes('u1')).rejects.toBeInstanceOf(closed);
    });
  });
}
