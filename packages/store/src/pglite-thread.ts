import { spawnModuleWorker } from '@agent-backend/threads';
import {
  DatabaseClosedError,
  type Database,
  type QueryResult,
  type Queryable,
  type Row,
} from './database.js';
import {
  deserializeError,
  type PgliteCacheChange,
  type PgliteRequest,
  type PgliteResponse,
  type PgliteThreadData,
} from './pglite-messages.js';
import type { PgliteOrigin } from './pglite-open.js';

type RequestBody = PgliteRequest extends infer R
  ? R extends { id: number }
    ? Omit<R, 'id'>
    : never
  : never;
type Answer = Extract<PgliteResponse, { id: number }>;

/** Raised for every pending and later call when the database thread is gone. */
export class DatabaseThreadExitedError extends Error {
  constructor(code: number) {
    super(`the embedded database thread exited (code ${code})`);
    this.name = 'DatabaseThreadExitedError';
  }
}

const WORKER_FILE = new URL('./pglite-worker.js', import.meta.url);

/**
 * PGlite on its own thread, behind the same {@link Database} port: the main thread only posts
 * statements and receives rows, so a statement that takes seconds (a 10 MB row) no longer
 * freezes every request, stream and socket of the process. Rows come back as structured
 * clones (Dates, parsed JSON and arrays as PGlite returns them); driver errors keep their fields.
 */
export async function startPgliteThread(
  data: PgliteThreadData,
  onCacheChange: (change: PgliteCacheChange) => void = () => {},
): Promise<Database & { readonly origin: PgliteOrigin; readonly sharedBuffersMb: number }> {
  const worker = spawnModuleWorker(WORKER_FILE, { workerData: data });
  const pending = new Map<
    number,
    { resolve: (answer: Answer) => void; reject: (error: Error) => void }
  >();
  let nextId = 1;
  let gone: Error | undefined;
  let closed = false;

  const ready = new Promise<Extract<PgliteResponse, { kind: 'ready' }>>((resolve, reject) => {
    const onMessage = (message: PgliteResponse) => {
      if ('id' in message) {
        const waiter = pending.get(message.id);
        pending.delete(message.id);
        if (pending.size === 0) worker.unref();
        if (!waiter) return;
        if (message.ok) waiter.resolve(message);
        else waiter.reject(deserializeError(message.error));
      } else if (message.kind === 'ready') resolve(message);
      else if (message.kind === 'cache') onCacheChange(message);
      else reject(deserializeError(message.error));
    };
    worker.on('message', onMessage);
    worker.on('error', (error) => {
      gone ??= error;
      reject(error);
    });
    worker.on('exit', (code) => {
      gone ??= new DatabaseThreadExitedError(code);
      reject(gone);
      for (const waiter of pending.values()) waiter.reject(gone);
      pending.clear();
    });
  });
  let opened: Extract<PgliteResponse, { kind: 'ready' }>;
  try {
    opened = await ready;
  } catch (error) {
    await worker.terminate();
    throw error;
  }
  worker.unref();

  const request = (body: RequestBody): Promise<Answer> => {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<Answer>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ ...body, id } as PgliteRequest);
    });
  };
  const query = async <R extends Row>(
    sql: string,
    params: readonly unknown[] | undefined,
    tx?: number,
  ): Promise<QueryResult<R>> => {
    const answer = await request({ kind: 'query', sql, params, tx });
    if (!answer.ok) throw new Error('unreachable');
    return { rows: (answer.rows ?? []) as R[], rowCount: answer.rowCount ?? 0 };
  };

  return {
    dialect: 'pglite',
    origin: opened.origin,
    sharedBuffersMb: opened.sharedBuffersMb,
    async query<R extends Row>(sql: string, params?: readonly unknown[]) {
      if (closed) throw new DatabaseClosedError();
      return query<R>(sql, params);
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      if (closed) throw new DatabaseClosedError();
      const begun = await request({ kind: 'begin' });
      const tx = begun.ok ? begun.tx! : 0;
      let result: T;
      try {
        result = await fn({ query: (sql, params) => query(sql, params, tx) });
      } catch (error) {
        await request({ kind: 'end', tx, commit: false }).catch(() => {});
        throw error;
      }
      await request({ kind: 'end', tx, commit: true });
      return result;
    },
    async ping() {
      if (closed) throw new DatabaseClosedError();
      await query('SELECT 1', undefined);
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        if (!gone) await request({ kind: 'close' });
      } finally {
        await worker.terminate();
      }
    },
  };
}
