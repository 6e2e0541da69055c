/**
 * Heap snapshots of a running server process, taken from outside: the process runs with
 * `--heapsnapshot-signal=SIGUSR2` and `--diagnostic-dir=<dir>` ({@link heapSnapshotFlags}), and
 * {@link takeHeapSnapshot} signals it and reads the file V8 writes. A snapshot holds what is
 * reachable after the full collection V8 runs before writing it, so two snapshots compare the
 * live heap, not where the young generation or the allocator happen to stand.
 */
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from './processes.js';

/** Node flags that let {@link takeHeapSnapshot} snapshot the process into `dir`. */
export function heapSnapshotFlags(dir: string): string[] {
  return ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${dir}`];
}

/** The live heap of one snapshot: its total, and per kind of object (type and constructor). */
export interface HeapSummary {
  readonly bytes: number;
  /** `object:Foo`, `closure:bar`, `string`, `code`, ... → count and shallow bytes. */
  readonly kinds: ReadonlyMap<string, { count: number; bytes: number }>;
}

/** Signals `pid` to write a snapshot into `dir` (its `--diagnostic-dir`), reads and removes it. */
export async function takeHeapSnapshot(pid: number, dir: string): Promise<HeapSummary> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`process ${pid} wrote no heap snapshot in 120 s`);
    await sleep(200);
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    const path = join(dir, file);
    // V8 writes the file in one go while the process is paused: done once its size holds still.
    const size = statSync(path).size;
    await sleep(300);
    if (size === 0 || statSync(path).size !== size) continue;
    let summary: HeapSummary;
    try {
      summary = summarize(readFileSync(path, 'utf8'));
    } catch {
      continue; // not complete yet
    }
    rmSync(path);
    return summary;
  }
}

interface SnapshotJson {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

function summarize(text: string): HeapSummary {
  const json = JSON.parse(text) as SnapshotJson;
  const fields = json.snapshot.meta.node_fields;
  const types = json.snapshot.meta.node_types[0];
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const kinds = new Map<string, { count: number; bytes: number }>();
  let bytes = 0;
  for (let i = 0; i < json.nodes.length; i += fields.length) {
    const type = types[json.nodes[i + typeAt!]!]!;
    const size = json.nodes[i + sizeAt!]!;
    const named = type === 'object' || type === 'closure' || type === 'native';
    const key = named ? `${type}:${json.strings[json.nodes[i + nameAt!]!]}` : type;
    const kind = kinds.get(key) ?? { count: 0, bytes: 0 };
    kind.count++;
    kind.bytes += size;
    kinds.set(key, kind);
    bytes += size;
  }
  return { bytes, kinds };
}

/** The kinds that grew most from `before` to `after`, largest first, per `per` (e.g. streams). */
export function heapGrowth(
  before: HeapSummary,
  after: HeapSummary,
  per: number,
  top = 8,
): Array<{ kind: string; count: number; bytes: number }> {
  const grown: Array<{ kind: string; count: number; bytes: number }> = [];
  for (const [kind, { count, bytes }] of after.kinds) {
    const was = before.kinds.get(kind) ?? { count: 0, bytes: 0 };
    grown.push({ kind, count: (count - was.count) / per, bytes: (bytes - was.bytes) / per });
  }
  return grown.sort((a, b) => b.bytes - a.bytes).slice(0, top);
}
