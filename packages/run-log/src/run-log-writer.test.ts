import { describe, expect, it } from 'vitest';
import { createMemoryRunLog } from './memory-run-log.js';
import type { AppendOptions, RunLog, RunLogEntry } from './run-log.js';
import { MAX_IN_FLIGHT, RunLogWriter } from './run-log-writer.js';

/**
 * The memory run log whose appends are acknowledged only when the test says: each append is
 * applied (or, `fail`, refused without storing anything) at `settle`, in order.
 */
function heldLog() {
  const log = createMemoryRunLog();
  const calls: Array<{
    entries: readonly RunLogEntry[];
    options?: AppendOptions;
    settle(fail?: boolean): Promise<void>;
  }> = [];
  const held: RunLog = {
    ...log,
    info: (runId) => log.info(runId),
    read: (runId, options) => log.read(runId, options),
    append: (runId, entries, options) =>
      new Promise<void>((resolve, reject) => {
        calls.push({
          entries,
          ...(options ? { options } : {}),
          settle: async (fail = false) => {
            if (fail) return reject(new Error('connection lost'));
            await log.append(runId, entries, options).then(resolve, reject);
          },
        });
      }),
  };
  return { log, held, calls };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));
const event = (seq: number, final = false) => ({ seq, data: `e${seq}`, final });

describe('RunLogWriter', () => {
  it('sends the next batch while the previous append is in flight; an event is durable once every append before it returned', async () => {
    const { log, held, calls } = heldLog();
    const durable: number[] = [];
    const writer = new RunLogWriter(
      held,
      'r',
      () => undefined,
      (seq) => durable.push(seq),
    );
    writer.push(event(1));
    await tick();
    writer.push(event(2));
    await tick();
    // The first chunk does not wait behind the session event's round trip.
    expect(calls.map((c) => c.entries.map((e) => e.seq))).toEqual([[1], [2]]);
    expect(calls.map((c) => c.options?.after)).toEqual([undefined, 1]);
    expect(durable).toEqual([]);
    await calls[0]!.settle();
    await calls[1]!.settle();
    await writer.drained();
    expect(durable).toEqual([1, 2]);
    expect(writer.durableSeq).toBe(2);
    expect(await log.info('r')).toEqual({ lastSeq: 2, final: false });
  });

  it(`keeps at most ${MAX_IN_FLIGHT} appends in flight and batches the events meanwhile`, async () => {
    const { log, held, calls } = heldLog();
    const writer = new RunLogWriter(held, 'r', () => undefined);
    for (let seq = 1; seq <= 6; seq++) {
      writer.push(event(seq, seq === 6));
      await tick();
    }
    expect(calls.map((c) => c.entries.map((e) => e.seq))).toEqual([[1], [2]]);
    await calls[0]!.settle();
    await tick();
    expect(calls.map((c) => c.entries.map((e) => e.seq))).toEqual([[1], [2], [3, 4, 5, 6]]);
    const drained = writer.drained();
    await calls[1]!.settle();
    await calls[2]!.settle();
    await drained;
    expect(await log.info('r')).toEqual({ lastSeq: 6, final: true });
  });

  it('lets only the batch that ends the run wait for the turn, and only when something shares its write', async () => {
    for (const shared of [true, false]) {
      const { held, calls } = heldLog();
      const sent: number[] = [];
      const writer = new RunLogWriter(
        held,
        'r',
        () => undefined,
        undefined,
        shared ? () => sent.push(calls.length) : undefined,
      );
      writer.push(event(1));
      await tick();
      await calls[0]!.settle();
      writer.push(event(2, true));
      await tick();
      await calls[1]!.settle();
      await writer.drained();
      expect(calls.map((c) => c.options?.withTurn)).toEqual([false, shared]);
      // Called in the same tick as the final append was issued, after it.
      expect(sent).toEqual(shared ? [2] : []);
    }
  });

  it('leaves no gap when an earlier append failed: the later one stores nothing, the error is reported once', async () => {
    const { log, held, calls } = heldLog();
    const errors: unknown[] = [];
    const writer = new RunLogWriter(held, 'r', (error) => errors.push(error));
    writer.push(event(1));
    await tick();
    await calls[0]!.settle();
    writer.push(event(2));
    await tick();
    writer.push(event(3));
    await tick();
    await calls[1]!.settle(true);
    await calls[2]!.settle().catch(() => undefined);
    await writer.drained();
    expect(errors).toHaveLength(1);
    expect(await log.info('r')).toEqual({ lastSeq: 1, final: false });
    // The run's own clients are not held back by the log any more.
    writer.push(event(4));
    expect(writer.durableSeq).toBe(4);
  });
});
