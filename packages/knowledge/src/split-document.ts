import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ChunkLimitError, splitText, type Chunk, type SplitOptions } from '@agent-backend/chunking';
import type { KnowledgeDocumentType } from '@agent-backend/protocol';
import { htmlToText } from './html-text.js';

/** One split: a document's content (HTML is read as the text a reader sees) and the options. */
export interface SplitJob {
  readonly type: KnowledgeDocumentType;
  readonly content: string;
  readonly options?: SplitOptions;
}

/** {@link SplitJob} done in the calling thread. */
export function splitNow(job: SplitJob): Chunk[] {
  const text = job.type === 'html' ? htmlToText(job.content) : job.content;
  return splitText(text, job.options);
}

/** The worker's entry, compiled next to this module (`dist/split-worker.js`). */
const WORKER_FILE = new URL('./split-worker.js', import.meta.url);

/** A worker's answer: the chunks, or why there are none. */
export type SplitAnswer =
  | { readonly id: number; readonly chunks: Chunk[] }
  | {
      readonly id: number;
      readonly error: string;
      readonly limit?: { readonly limit: ChunkLimitError['limit']; readonly max: number };
    };

interface Pending {
  resolve(chunks: Chunk[]): void;
  reject(error: Error): void;
}

/**
 * Splits documents off the event loop: HTML to text and chunking are pure CPU (seconds for a
 * 10 MB document, during which no request, stream or socket of the process would be served), so
 * they run in one worker thread, started on first use and shared by the process; splits queue
 * in it one after the other. Where the compiled worker file does not exist (the package's own
 * tests run its TypeScript sources), they run in the calling thread.
 */
class Splitter {
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, Pending>();
  private readonly available = existsSync(fileURLToPath(WORKER_FILE));

  split(job: SplitJob): Promise<Chunk[]> {
    if (!this.available) {
      try {
        return Promise.resolve(splitNow(job));
      } catch (error) {
        return Promise.reject(error as Error);
      }
    }
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.ref();
      worker.postMessage({ id, job });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_FILE);
    worker.on('message', (answer: SplitAnswer) => {
      const pending = this.pending.get(answer.id);
      if (!pending) return;
      this.pending.delete(answer.id);
      // An idle worker must not keep the process alive.
      if (this.pending.size === 0) worker.unref();
      if ('chunks' in answer) pending.resolve(answer.chunks);
      else if (answer.limit)
        pending.reject(new ChunkLimitError(answer.limit.limit, answer.limit.max));
      else pending.reject(new Error(answer.error));
    });
    const fail = (error: Error) => {
      if (this.worker === worker) this.worker = undefined;
      for (const pending of this.pending.values()) pending.reject(error);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the splitting worker exited with ${code}`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }
}

const splitter = new Splitter();

/** {@link splitNow} in the process's splitting worker thread. */
export function splitDocument(job: SplitJob): Promise<Chunk[]> {
  return splitter.split(job);
}
