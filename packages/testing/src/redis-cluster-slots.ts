import { Redis } from 'ioredis';

/** A master of a test Cluster as `CLUSTER NODES` lists it. */
export interface ClusterMaster {
  readonly id: string;
  readonly port: number;
  /** Slot ranges it serves, inclusive. */
  readonly ranges: readonly (readonly [number, number])[];
}

const HOST = '127.0.0.1';

/** Runs `fn` on a plain (non-cluster) connection to the node on `port`, then closes it. */
async function onNode<T>(port: number, fn: (node: Redis) => Promise<T>): Promise<T> {
  const node = new Redis({ host: HOST, port, lazyConnect: true, retryStrategy: null });
  try {
    await node.connect();
    return await fn(node);
  } finally {
    node.disconnect();
  }
}

/** The connected, non-failed masters serving slots that `port`'s node knows, with their slots. */
export async function clusterMasters(port: number): Promise<ClusterMaster[]> {
  const text = String(await onNode(port, (node) => node.call('CLUSTER', 'NODES')));
  const masters: ClusterMaster[] = [];
  for (const line of text.trim().split('\n')) {
    const [id, address, flags, , , , , state, ...slots] = line.split(' ');
    if (!flags!.includes('master') || flags!.includes('fail') || state !== 'connected') continue;
    const ranges = slots
      .filter((range) => !range.startsWith('['))
      .map((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return [from!, to!] as const;
      });
    // A node that just became a replica can still show as a master without slots for a while.
    if (ranges.length === 0) continue;
    masters.push({ id: id!, port: Number(address!.split('@')[0]!.split(':')[1]), ranges });
  }
  return masters;
}

/** The slot of a key or shard channel, as the Cluster computes it. */
export async function clusterKeySlot(port: number, key: string): Promise<number> {
  return Number(await onNode(port, (node) => node.call('CLUSTER', 'KEYSLOT', key)));
}

/** The master serving `slot`, as `port`'s node sees it (undefined while nobody serves it). */
export async function slotOwner(port: number, slot: number): Promise<ClusterMaster | undefined> {
  const masters = await clusterMasters(port);
  return masters.find((m) => m.ranges.some(([from, to]) => slot >= from && slot <= to));
}

/**
 * Whether every replica of the master on `port` has acknowledged all it has written: a replica
 * acknowledges once a second, and a failover test that kills the master sooner loses the writes
 * of that second with it (replication is asynchronous), which is Redis's doing, not the client's.
 */
export async function replicasCaughtUp(port: number): Promise<boolean> {
  const info = String(await onNode(port, (node) => node.info('replication')));
  const written = Number(/master_repl_offset:(\d+)/.exec(info)?.[1] ?? Number.NaN);
  const replicas = [...info.matchAll(/^slave\d+:.*state=(\w+),offset=(\d+)/gm)];
  return (
    replicas.length > 0 &&
    replicas.every(([, state, offset]) => state === 'online' && Number(offset) >= written)
  );
}

/**
 * Moves `slots` to the master `to`, one after the other on connections kept open (so the moves
 * follow each other within milliseconds), the way `redis-cli --cluster reshard` moves each slot:
 * IMPORTING on the target, MIGRATING on the source, MIGRATE of its keys, then SETSLOT NODE on the
 * target, the source and every other master. On the last step the source drops the slot and
 * sends a `sunsubscribe` push to every shard-channel subscriber of that slot.
 *
 * With `pauseMs`, it waits that long after each step, so traffic meets every state of a move:
 * the slot MIGRATING with its keys still on the source, the keys moved but the slot not yet
 * (clients are sent `ASK`), and the slot owned by the target on some masters only (`MOVED`).
 */
export async function migrateSlots(
  anyPort: number,
  slots: readonly number[],
  to: ClusterMaster,
  options: { pauseMs?: number } = {},
) {
  const pause = () =>
    options.pauseMs ? new Promise((resolve) => setTimeout(resolve, options.pauseMs)) : undefined;
  const masters = await clusterMasters(anyPort);
  const nodes = new Map(
    masters.map((m) => [m.id, new Redis({ host: HOST, port: m.port, retryStrategy: null })]),
  );
  const on = (master: ClusterMaster) => nodes.get(master.id)!;
  try {
    for (const slot of slots) {
      const from = masters.find((m) => m.ranges.some(([a, b]) => slot >= a && slot <= b));
      if (!from) throw new Error(`slot ${slot} has no master`);
      if (from.id === to.id) continue;
      await on(to).call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', from.id);
      await on(from).call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', to.id);
      await pause();
      for (;;) {
        const keys = (await on(from).call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
        if (keys.length === 0) break;
        await on(from).call('MIGRATE', HOST, to.port, '', 0, 5_000, 'KEYS', ...keys);
      }
      await pause();
      const order = [to, from, ...masters.filter((m) => m.id !== from.id && m.id !== to.id)];
      for (const master of order) {
        await on(master).call('CLUSTER', 'SETSLOT', slot, 'NODE', to.id);
        await pause();
      }
    }
  } finally {
    for (const node of nodes.values()) node.disconnect();
  }
}
