import { ChunkLimitError, type Chunk, type SplitOptions } from '@agent-backend/chunking';
import type { KnowledgeDocumentType } from '@agent-backend/protocol';
import { TaskThread } from '@agent-backend/threads';

/** One split: a document's content (HTML is read as the text a reader sees) and the options. */
export interface SplitJob {
  readonly type: KnowledgeDocumentType;
  readonly content: string;
  readonly options?: SplitOptions;
}

/** The worker's entry, compiled next to this module (`dist/split-worker.js`; `src/*.ts` unbuilt). */
const WORKER_FILE = new URL('./split-worker.js', import.meta.url);

/** A worker's answer: the chunks, or why there are none. */
export type SplitAnswer =
  | { readonly id: number; readonly chunks: Chunk[] }
  | {
      readonly id: number;
      readonly error: string;
      readonly limit?: { readonly limit: ChunkLimitError['limit']; readonly max: number };
    };

/**
 * Splits run off the event loop: HTML to text and chunking are pure CPU (seconds for a 10 MB
 * document, during which no request, stream or socket of the process would be served), so they
 * run in one worker thread, started on first use and shared by the process; splits queue in it
 * one after the other.
 */
const splitter = new TaskThread<{ job: SplitJob }, SplitAnswer>(WORKER_FILE, 'splitting');

/** The split of `job` (`splitNow` in `split-now.ts`) in the process's splitting worker thread. */
export async function splitDocument(job: SplitJob): Promise<Chunk[]> {
  const answer = await splitter.run({ job });
  if ('chunks' in answer) return answer.chunks;
  if (answer.limit) throw new ChunkLimitError(answer.limit.limit, answer.limit.max);
  throw new Error(answer.error);
}
