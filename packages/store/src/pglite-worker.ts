/**
 * The thread that runs PGlite for {@link createPgliteDatabase} `{ thread: true }`: PostgreSQL in
 * WebAssembly runs synchronously, so a statement over a 10 MB row would otherwise hold the
 * event loop of the whole service. It answers the main thread's requests in order
 * of arrival; PGlite itself serializes statements and holds others back during a transaction.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { PGlite, Transaction } from '@electric-sql/pglite';
import {
  serializeError,
  type PgliteRequest,
  type PgliteResponse,
  type PgliteThreadData,
} from './pglite-messages.js';
import { openPglite } from './pglite-open.js';

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

try {
  const { db, origin } = await openPglite(options);
  port.on('message', (request: PgliteRequest) => {
    handle(db, request).then(send, (error: unknown) =>
      send({ id: request.id, ok: false, error: serializeError(error) }),
    );
  });
  send({ kind: 'ready', origin });
} catch (error) {
  send({ kind: 'failed', error: serializeError(error) });
}
