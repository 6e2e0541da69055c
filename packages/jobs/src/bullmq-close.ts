import type { Queue, Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';

/** How long each forced step of {@link closeBullmq} may take before the next one goes on. */
export const FORCE_CLOSE_GRACE_MS = 2_000;

/** Whether `work` settled within `ms` (it is not cancelled when it did not). Never rejects. */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      expired,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ends a connection at once, rejecting whatever it had queued. ioredis's `disconnect()` while it
 * waits to reconnect (Redis down, a Sentinel master just killed) neither ends the connection nor
 * rejects the queued commands; a fresh connect attempt makes it do both.
 */
function endNow(client: Redis | Cluster): void {
  if (client.status === 'end') return;
  if (client.status === 'reconnecting') client.connect().catch(() => undefined);
  client.disconnect();
}

/**
 * Closes BullMQ workers and queues within a bound: {@link FORCE_CLOSE_GRACE_MS} to end the
 * workers' blocking connections, `drainTimeoutMs` for their running jobs, the grace again for
 * the queues.
 *
 * BullMQ alone is unbounded twice over: `Worker.close(true)` after `close()` returns the first,
 * graceful close's promise (so "drain, then force" waited for the drain forever); and a worker
 * closing while its blocking connection waits to reconnect waits for that connection's `end`,
 * which ioredis never emits (the engines' close hung while the Sentinel master was down, issue
 * 37). Here the blocking connections end at once, and a worker that did not drain in time is
 * left behind.
 */
export async function closeBullmq(
  workers: readonly Worker[],
  queues: readonly Queue[],
  drainTimeoutMs: number,
): Promise<void> {
  const drained = Promise.allSettled(workers.map((worker) => worker.close()));
  // Closing, a worker disconnects its blocking connection (it only fetches jobs) and waits for
  // its end; ending it here too makes that end come when the connection was reconnecting.
  await settledWithin(
    Promise.allSettled(
      workers.map(async (worker) => {
        const blocking = await worker.backend.blockingClient;
        if (blocking) endNow(blocking as unknown as Redis | Cluster);
      }),
    ),
    FORCE_CLOSE_GRACE_MS,
  );
  // A handler that ignores the abort signal never returns: its worker's close stays pending, its
  // job's lock lapses once the connections close, and another worker gets the job (stalled).
  await settledWithin(drained, drainTimeoutMs);
  await settledWithin(
    Promise.allSettled(queues.map((queue) => queue.close())),
    FORCE_CLOSE_GRACE_MS,
  );
}
