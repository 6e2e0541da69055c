/**
 * The behaviour every run log adapter must share. Adapter-only checks live in
 * `run-log.<adapter>.test.ts`. Each call of `makeReplicas` gives an empty namespace; the
 * replicas it returns share it (for the memory adapter, one log stands for every replica).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunLog, RunLogEntry } from './run-log.js';
import { RunLogClosedError, RunLogSequenceError } from './errors.js';

/** Creates two logs on one empty namespace, as two replicas see it. */
export type MakeRunLogReplicas = (options: { retentionMs?: number }) => Promise<[RunLog, RunLog]>;

const entries = (from: number, to: number, final = false): RunLogEntry[] =>
  Array.from({ length: to - from + 1 }, (_, i) => {
    const seq = from + i;
    return final && seq === to ? { seq, data: `e${seq}`, final: true } : { seq, data: `e${seq}` };
  });

async function collect(iterable: AsyncIterable<RunLogEntry>): Promise<RunLogEntry[]> {
  const out: RunLogEntry[] = [];
  for await (const entry of iterable) out.push(entry);
  return out;
}

/** The run log contract suite; every adapter runs it. */
export function describeRunLogContract(name: string, makeReplicas: MakeRunLogReplicas): void {
  describe(`run log contract: ${name}`, () => {
    const open: RunLog[] = [];
    const make = async (options: { retentionMs?: number } = {}) => {
      const replicas = await makeReplicas(options);
      open.push(...replicas);
      return replicas;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((log) => log.close()));
    });

    it('replays a run in order from any replica, after a given seq', async () => {
      const [writer, reader] = await make();
      await writer.append('r1', entries(1, 3));
      await writer.append('r1', [{ seq: 4, data: 'ü 🔑 {"json":1}\n\ndata: x', final: true }]);
      const all = await collect(reader.read('r1', {}));
      expect(all.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect(all[3]).toEqual({ seq: 4, data: 'ü 🔑 {"json":1}\n\ndata: x', final: true });
      expect(all[0]).toEqual({ seq: 1, data: 'e1' });
      expect((await collect(reader.read('r1', { afterSeq: 2 }))).map((e) => e.seq)).toEqual([3, 4]);
      expect(await collect(reader.read('r1', { afterSeq: 4, follow: true }))).toEqual([]);
      expect(await collect(reader.read('unknown', {}))).toEqual([]);
    });

    it('reports the last seq and whether the run ended', async () => {
      const [writer, reader] = await make();
      expect(await reader.info('r1')).toBeNull();
      await writer.append('r1', entries(1, 2));
      expect(await reader.info('r1')).toEqual({ lastSeq: 2, final: false });
      await writer.append('r1', entries(3, 3, true));
      expect(await reader.info('r1')).toEqual({ lastSeq: 3, final: true });
    });

    it('keeps runs apart', async () => {
      const [writer, reader] = await make();
      await writer.append('a', entries(1, 2));
      await writer.append('b', entries(1, 1));
      expect((await collect(reader.read('a', {}))).length).toBe(2);
      expect((await collect(reader.read('b', {}))).length).toBe(1);
    });

    it('deletes runs at once from every replica, counting those it found', async () => {
      const [writer, reader] = await make();
      await writer.append('gone-1', entries(1, 2));
      await writer.append('gone-2', entries(1, 1, true));
      await writer.append('kept', entries(1, 1));
      expect(await reader.delete(['gone-1', 'gone-2', 'never'])).toBe(2);
      expect(await writer.info('gone-1')).toBeNull();
      expect(await collect(writer.read('gone-2', {}))).toEqual([]);
      expect(await reader.info('kept')).toEqual({ lastSeq: 1, final: false });
      expect(await reader.delete(['gone-1'])).toBe(0);
      expect(await reader.delete([])).toBe(0);
    });

    it('follows live appends on several replicas until the final entry', async () => {
      const [writer, reader] = await make();
      await writer.append('live', entries(1, 1));
      const followers = [reader, writer, reader].map((log) =>
        collect(log.read('live', { follow: true, idleTimeoutMs: 10_000 })),
      );
      const early = collect(reader.read('not-yet', { follow: true, idleTimeoutMs: 10_000 }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await writer.append('live', entries(2, 3));
      await writer.append('not-yet', entries(1, 1, true));
      await new Promise((resolve) => setTimeout(resolve, 20));
      await writer.append('live', entries(4, 5, true));
      for (const result of await Promise.all(followers)) {
        expect(result.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      }
      expect(await early).toEqual([{ seq: 1, data: 'e1', final: true }]);
    });

    it('yields the final entry appended while the reader held the one before it', async () => {
      const [writer, reader] = await make();
      await writer.append('held', entries(1, 1));
      const seen: number[] = [];
      for await (const entry of reader.read('held', { follow: true, idleTimeoutMs: 10_000 })) {
        seen.push(entry.seq);
        if (entry.seq === 1) await writer.append('held', entries(2, 2, true));
      }
      expect(seen).toEqual([1, 2]);
    });

    it('ends a following read after the idle timeout when the writer went quiet', async () => {
      const [writer, reader] = await make();
      await writer.append('quiet', entries(1, 2));
      const read = await collect(reader.read('quiet', { follow: true, idleTimeoutMs: 200 }));
      expect(read.map((e) => e.seq)).toEqual([1, 2]);
    });

    it('ends a following read when its signal aborts', async () => {
      const [writer, reader] = await make();
      await writer.append('abort', entries(1, 1));
      const controller = new AbortController();
      const read = collect(
        reader.read('abort', { follow: true, idleTimeoutMs: 60_000, signal: controller.signal }),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      controller.abort();
      const result = await Promise.race([
        read,
        new Promise((resolve) => setTimeout(() => resolve('still reading'), 5_000)),
      ]);
      expect(result).toEqual([{ seq: 1, data: 'e1' }]);
      // The log keeps working for other readers after an aborted one.
      await writer.append('abort', entries(2, 2, true));
      expect((await collect(reader.read('abort', { follow: true }))).length).toBe(2);
    });

    it('rejects appends that do not continue the run, storing nothing of them', async () => {
      const [writer, other] = await make();
      await writer.append('seq', entries(1, 3));
      await expect(other.append('seq', entries(3, 4))).rejects.toBeInstanceOf(RunLogSequenceError);
      await expect(
        writer.append('seq', [
          { seq: 5, data: 'x' },
          { seq: 5, data: 'y' },
        ]),
      ).rejects.toBeInstanceOf(RunLogSequenceError);
      await expect(writer.append('seq', [])).rejects.toBeInstanceOf(RangeError);
      expect(await writer.info('seq')).toEqual({ lastSeq: 3, final: false });
      await writer.append('seq', entries(4, 4));
      expect((await collect(other.read('seq', {}))).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    });

    it('appends with `after` only when the run ends at that entry, storing nothing otherwise', async () => {
      const [writer, other] = await make();
      await writer.append('after', entries(1, 2), { after: 0 });
      // The batch before it never arrived: 5 would leave a gap after 2.
      await expect(writer.append('after', entries(5, 5), { after: 4 })).rejects.toBeInstanceOf(
        RunLogSequenceError,
      );
      await expect(writer.append('fresh', entries(1, 1), { after: 3 })).rejects.toBeInstanceOf(
        RunLogSequenceError,
      );
      expect(await writer.info('fresh')).toBeNull();
      await writer.append('after', entries(3, 4, true), { after: 2 });
      expect((await collect(other.read('after', {}))).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    });

    it('forgets a run retentionMs after its last append, and every append restarts the window', async () => {
      const retentionMs = 1_000;
      const [writer, reader] = await make({ retentionMs });
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      // A loaded machine can stretch the sleeps past the margins; such an attempt proves nothing
      // either way and is repeated with a fresh run, while a conclusive one must hold.
      let conclusive = false;
      for (let attempt = 0; attempt < 4 && !conclusive; attempt += 1) {
        const runId = `short-${attempt}`;
        await writer.append(runId, entries(1, 1));
        const firstAppended = performance.now();
        await sleep(600);
        const secondStarted = performance.now();
        await writer.append(runId, entries(2, 2));
        await sleep(Math.max(0, firstAppended + retentionMs + 100 - performance.now()));
        const checkStarted = performance.now();
        const info = await reader.info(runId);
        const checkEnded = performance.now();
        // Past the first append's window, still inside the second's: only the restart keeps it.
        conclusive =
          checkStarted - firstAppended > retentionMs && checkEnded - secondStarted < retentionMs;
        if (conclusive) expect(info).toEqual({ lastSeq: 2, final: false });
        await vi.waitFor(async () => expect(await reader.info(runId)).toBeNull(), {
          timeout: 10_000,
          interval: 20,
        });
        expect(await collect(reader.read(runId, {}))).toEqual([]);
      }
      expect(conclusive).toBe(true);
    });

    it('forgets deleted runs at once for every replica, and keeps the others', async () => {
      const [writer, reader] = await make();
      await writer.append('gone-1', entries(1, 2, true));
      await writer.append('gone-2', entries(1, 1));
      await writer.append('kept', entries(1, 1));
      await reader.delete(['gone-1', 'gone-2', 'never-written']);
      await reader.delete([]);
      for (const log of [writer, reader]) {
        expect(await log.info('gone-1')).toBeNull();
        expect(await log.info('gone-2')).toBeNull();
        expect(await collect(log.read('gone-1', {}))).toEqual([]);
        expect(await log.info('kept')).toEqual({ lastSeq: 1, final: false });
      }
      // The id is free again: a new run starts at 1.
      await writer.append('gone-2', entries(1, 1, true));
      expect(await reader.info('gone-2')).toEqual({ lastSeq: 1, final: true });
    });

    it('rejects every method after close, ends following reads, and closes idempotently', async () => {
      const [writer, reader] = await make();
      await writer.append('c', entries(1, 1));
      const following = collect(reader.read('c', { follow: true, idleTimeoutMs: 60_000 }));
      await new Promise((resolve) => setTimeout(resolve, 50));
      await Promise.all([reader.close(), reader.close()]);
      expect(await following).toEqual([{ seq: 1, data: 'e1' }]);
      await expect(reader.append('c', entries(2, 2))).rejects.toBeInstanceOf(RunLogClosedError);
      await expect(reader.info('c')).rejects.toBeInstanceOf(RunLogClosedError);
      await expect(reader.delete(['c'])).rejects.toBeInstanceOf(RunLogClosedError);
      await expect(collect(reader.read('c', {}))).rejects.toBeInstanceOf(RunLogClosedError);
    });
  });
}
