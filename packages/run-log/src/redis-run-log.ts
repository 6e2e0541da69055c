import {
  closeRedis,
  createRedis,
  defineScript,
  redisKeys,
  unlinkKeys,
  type Redis,
  type RedisKeys,
} from '@agent-backend/redis';
import {
  type AppendOptions,
  DEFAULT_RUN_LOG_IDLE_TIMEOUT_MS,
  DEFAULT_RUN_LOG_RETENTION_MS,
  type ReadOptions,
  type RunLog,
  type RunLogEntry,
  type RunLogInfo,
  type RunLogOptions,
} from './run-log.js';
import { RunLogClosedError, RunLogSequenceError, checkBatch, checkRetention } from './errors.js';
import { BlockingPool } from './blocking-pool.js';
import { waitForSignal } from './wait.js';

/** Options of {@link createRedisRunLog}. */
export type RedisRunLogOptions = RunLogOptions & {
  /** Key prefix, see `redisKeys`. @default 'ab:' */
  prefix?: string;
  /** Connections kept open for following readers between reads. @default 8 */
  idleBlockingConnections?: number;
} & ({ url: string } | { /** Shared connection; the log does not close it. */ redis: Redis });

/** Entries fetched per XRANGE / XREAD call. */
const PAGE = 500;

/**
 * Appends a batch atomically: the whole batch or, when its first `seq` does not follow the
 * stream's last entry (or that entry is not the expected one), nothing. Entry ids are
 * `0-<seq>`, so readers can ask for "after seq n" directly. ARGV: retention ms, the expected
 * last seq (-1: any), then (seq, data, final) triples. Returns { ok, lastSeq }.
 */
const appendScript = defineScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local lastSeq = 0
if #last > 0 then lastSeq = tonumber(string.match(last[1][1], '%-(%d+)$')) end
local expected = tonumber(ARGV[2])
if expected >= 0 and expected ~= lastSeq then return {0, lastSeq} end
if tonumber(ARGV[3]) <= lastSeq then return {0, lastSeq} end
for i = 3, #ARGV, 3 do
  if ARGV[i + 2] == '1' then
    redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'd', ARGV[i + 1], 'f', '1')
  else
    redis.call('XADD', KEYS[1], '0-' .. ARGV[i], 'd', ARGV[i + 1])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {1, lastSeq}
`);

type StreamEntry = [id: string, fields: string[]];

function toEntry([id, fields]: StreamEntry): RunLogEntry {
  let data = '';
  let final = false;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'd') data = fields[i + 1]!;
    else if (fields[i] === 'f') final = fields[i + 1] === '1';
  }
  const seq = Number(id.slice(id.indexOf('-') + 1));
  return final ? { seq, data, final } : { seq, data };
}

/**
 * The distributed run log: one Redis stream per run under `<prefix>runlog:<runId>`, expiring
 * `retentionMs` after its last append. Replay is XRANGE on the shared connection; following
 * readers block in XREAD on a connection of their own (taken from a small pool), because a
 * blocked connection can serve nobody else. An aborted reader's connection is dropped, which
 * ends its XREAD at once.
 */
class RedisRunLog implements RunLog {
  private closing: Promise<void> | undefined;
  private readonly pool: BlockingPool;

  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
    private readonly retentionMs: number,
    private readonly owned: boolean,
    idleConnections: number,
  ) {
    this.pool = new BlockingPool(redis, idleConnections);
  }

  async append(
    runId: string,
    entries: readonly RunLogEntry[],
    options: AppendOptions = {},
  ): Promise<void> {
    this.assertOpen();
    checkBatch(runId, entries, 0);
    const args: (string | number)[] = [this.retentionMs, options.after ?? -1];
    for (const entry of entries) args.push(entry.seq, entry.data, entry.final ? '1' : '0');
    const [ok, lastSeq] = (await appendScript(this.redis, [this.keys.runLog(runId)], args, {
      now: !options.withTurn,
    })) as [number, number];
    if (ok !== 1) throw new RunLogSequenceError(runId, entries[0]!.seq, lastSeq);
  }

  async info(runId: string): Promise<RunLogInfo | null> {
    this.assertOpen();
    const last = (await this.redis.xrevrange(this.keys.runLog(runId), '+', '-', 'COUNT', 1)) as
      StreamEntry[] | null;
    const entry = last?.[0];
    if (!entry) return null;
    const parsed = toEntry(entry);
    return { lastSeq: parsed.seq, final: parsed.final === true };
  }

  read(runId: string, options: ReadOptions): AsyncIterable<RunLogEntry> {
    return this.iterate(runId, options);
  }

  async delete(runIds: readonly string[]): Promise<number> {
    this.assertOpen();
    let deleted = 0;
    // UNLINK per page of keys: one round trip a page, and Redis frees the streams off its thread.
    for (let i = 0; i < runIds.length; i += PAGE) {
      const keys = runIds.slice(i, i + PAGE).map((id) => this.keys.runLog(id));
      deleted += await unlinkKeys(this.redis, keys);
    }
    return deleted;
  }

  private async *iterate(runId: string, options: ReadOptions): AsyncGenerator<RunLogEntry> {
    this.assertOpen();
    const key = this.keys.runLog(runId);
    let after = options.afterSeq ?? 0;
    for (;;) {
      const page = (await this.redis.xrange(key, `0-${after + 1}`, '+', 'COUNT', PAGE)) as
        StreamEntry[] | null;
      for (const raw of page ?? []) {
        const entry = toEntry(raw);
        yield entry;
        after = entry.seq;
        if (entry.final) return;
      }
      if (!page || page.length < PAGE) break;
    }
    if (!options.follow) return;
    // The final entry may be the one the reader already has: then there is nothing to wait for.
    // One appended since the replay above is read below (XREAD answers at once when it is there).
    const tail = await this.info(runId);
    if (tail?.final && tail.lastSeq <= after) return;
    const idleMs = options.idleTimeoutMs ?? DEFAULT_RUN_LOG_IDLE_TIMEOUT_MS;
    const connection = this.pool.acquire();
    let healthy = true;
    const stop = waitForSignal(options.signal, () => {
      healthy = false;
      connection.disconnect();
    });
    try {
      while (!this.closing && !options.signal?.aborted) {
        const result = (await connection
          .xread(
            'COUNT',
            PAGE,
            'BLOCK',
            Math.max(1, Math.ceil(idleMs)),
            'STREAMS',
            key,
            `0-${after}`,
          )
          .catch(() => {
            healthy = false;
            return null;
          })) as [string, StreamEntry[]][] | null;
        const batch = result?.[0]?.[1];
        if (!batch || batch.length === 0) return;
        for (const raw of batch) {
          const entry = toEntry(raw);
          yield entry;
          after = entry.seq;
          if (entry.final) return;
        }
      }
    } finally {
      stop();
      this.pool.release(connection, healthy && !this.closing);
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.pool.close();
      if (this.owned) await closeRedis(this.redis);
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing) throw new RunLogClosedError();
  }
}

/**
 * A Redis-backed {@link RunLog} (the distributed engine). With `url` the log opens its own
 * connection and quits it on close; blocking connections are always its own.
 */
export function createRedisRunLog(options: RedisRunLogOptions): RunLog {
  const keys = redisKeys(options.prefix);
  const retention = checkRetention(options.retentionMs ?? DEFAULT_RUN_LOG_RETENTION_MS);
  const idle = options.idleBlockingConnections ?? 8;
  if ('redis' in options) return new RedisRunLog(options.redis, keys, retention, false, idle);
  const redis = createRedis(options.url, {
    name: 'run-log',
    onError: (err) => process.emitWarning(err),
  });
  return new RedisRunLog(redis, keys, retention, true, idle);
}
