/**
 * The thread that runs PGlite for {@link createPgliteDatabase} `{ thread: true }`: PostgreSQL in
 * WebAssembly runs synchronously, so a statement over a 10 MB row would otherwise hold the
 * event loop of the whole service. It answers the main thread's requests in order
 * of arrival; PGlite itself serializes statements and holds others back during a transaction.
 *
 * With a data directory and no fixed `sharedBuffersMb`, it also grows the page cache as the data
 * grows: every `cacheCheckMs` it sizes the cache again ({@link sharedBuffersForData}) and, when
 * that is {@link CACHE_GROW_STEP_MB} or more above the open one, closes and reopens PGlite with it
 * once no statement and no transaction is open, holding new requests back meanwhile (well under
 * a second). `shared_buffers` cannot change while PostgreSQL runs, and PGlite keeps all of it
 * resident, so it starts small and grows with the data (docs/deployment.md, "Memory").
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import {
  serializeError,
  type PgliteRequest,
  type PgliteResponse,
  type PgliteThreadData,
} from './pglite-messages.js';
import { CACHE_GROW_STEP_MB, openPglite, sharedBuffersForData } from './pglite-open.js';

const port = parentPort!;
const options = workerData as PgliteThreadData;
const send = (message: PgliteResponse) => port.postMessage(message);

/** Open transactions: the PGlite handle and how to finish it. */
interface OpenTransaction {
  tx: Transaction;
  finish: (commit: boolean) => void;
  settled: Promise<void>;
}
const transactions = new Map<number, OpenTransaction>();
let nextTx = 1;

/** Thrown inside PGlite's transaction callback to make it roll back. */
class Rollback extends Error {}

async function handle(db: PGlite, request: PgliteRequest): Promise<PgliteResponse> {
  switch (request.kind) {
    case 'query': {
      const target = request.tx === undefined ? db : transactions.get(request.tx)?.tx;
      if (!target) throw new Error(`transaction ${request.tx} is not open`);
      const result = await target.query(request.sql, request.params as unknown[] | undefined);
      return {
        id: request.id,
        ok: true,
        rows: result.rows,
        rowCount: result.affectedRows || result.rows.length,
      };
    }
    case 'begin': {
      const txId = nextTx++;
      const entry = {} as OpenTransaction;
      const decided = new Promise<boolean>((resolve) => (entry.finish = resolve));
      let opened!: () => void;
      const isOpen = new Promise<void>((resolve) => (opened = resolve));
      entry.settled = db
        .transaction(async (tx) => {
          entry.tx = tx;
          transactions.set(txId, entry);
          opened();
          if (!(await decided)) throw new Rollback();
        })
        .catch((error: unknown) => {
          if (!(error instanceof Rollback)) throw error;
        })
        .finally(() => transactions.delete(txId));
      entry.settled.catch(() => {}); // awaited by `end`; never an unhandled rejection here
      // BEGIN itself may fail (closed database): answer with that failure.
      await Promise.race([isOpen, entry.settled]);
      return { id: request.id, ok: true, tx: txId };
    }
    case 'end': {
      const open = transactions.get(request.tx);
      if (!open) throw new Error(`transaction ${request.tx} is not open`);
      open.finish(request.commit);
      await open.settled;
      return { id: request.id, ok: true };
    }
    case 'close': {
      await db.close();
      return { id: request.id, ok: true };
    }
  }
}

let db: PGlite;
/** Settles once a reopen ends: requests that arrive meanwhile wait for it. */
let reopening: Promise<void> | undefined;
let closed = false;
/** Requests being handled (their promises), so a reopen waits for them. */
const inflight = new Set<Promise<unknown>>();

/** Requests of an open transaction go to the handle that began it, reopen or not. */
const ofOpenTransaction = (request: PgliteRequest) =>
  request.kind === 'end' || (request.kind === 'query' && request.tx !== undefined);

async function dispatch(request: PgliteRequest): Promise<PgliteResponse> {
  if (request.kind === 'close') closed = true;
  if (reopening && !ofOpenTransaction(request)) await reopening;
  const work = handle(db, request);
  inflight.add(work);
  try {
    return await work;
  } finally {
    inflight.delete(work);
  }
}

/** How long a reopen holds new requests back waiting for open statements and transactions. */
const QUIET_WAIT_MS = 1_000;

/**
 * Closes PGlite and opens it again with a `toMb` page cache, once nothing is open on it; `false`
 * when statements or transactions stayed open {@link QUIET_WAIT_MS} (nothing changed then).
 */
async function reopenWith(fromMb: number, toMb: number): Promise<boolean> {
  let done!: () => void;
  reopening = new Promise<void>((resolve) => (done = resolve));
  try {
    const deadline = performance.now() + QUIET_WAIT_MS;
    while (inflight.size > 0 || transactions.size > 0) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        ...inflight,
        ...[...transactions.values()].map((t) => t.settled),
        new Promise((resolve) => (timer = setTimeout(resolve, left))),
      ]).catch(() => {});
      clearTimeout(timer);
    }
    if (closed) return false;
    const started = performance.now();
    await db.close();
    try {
      ({ db } = await openPglite({ ...options, sharedBuffersMb: toMb }));
    } catch (error) {
      // The larger cache could not be had (memory): the database as it was, and say why.
      send({ kind: 'cache', fromMb, toMb: fromMb, ms: 0, error: serializeError(error) });
      ({ db } = await openPglite({ ...options, sharedBuffersMb: fromMb }));
      return true;
    }
    send({ kind: 'cache', fromMb, toMb, ms: Math.round(performance.now() - started) });
    return true;
  } finally {
    reopening = undefined;
    done();
  }
}

try {
  const opened = await openPglite(options);
  db = opened.db;
  port.on('message', (request: PgliteRequest) => {
    dispatch(request).then(send, (error: unknown) =>
      send({ id: request.id, ok: false, error: serializeError(error) }),
    );
  });
  send({ kind: 'ready', origin: opened.origin, sharedBuffersMb: opened.sharedBuffersMb });
  const { dataDir, cacheCheckMs } = options;
  if (dataDir && options.sharedBuffersMb === undefined && cacheCheckMs) {
    let cacheMb = opened.sharedBuffersMb;
    const timer = setInterval(() => {
      if (closed) return clearInterval(timer);
      if (reopening) return;
      const wanted = sharedBuffersForData(dataDir);
      if (wanted < cacheMb + CACHE_GROW_STEP_MB) return;
      const fromMb = cacheMb;
      cacheMb = wanted;
      reopenWith(fromMb, wanted).then(
        (reopened) => {
          if (!reopened) cacheMb = fromMb; // busy: tried again at the next check
        },
        (error: unknown) =>
          send({ kind: 'cache', fromMb, toMb: 0, ms: 0, error: serializeError(error) }),
      );
    }, cacheCheckMs);
    timer.unref();
  }
} catch (error) {
  send({ kind: 'failed', error: serializeError(error) });
}
