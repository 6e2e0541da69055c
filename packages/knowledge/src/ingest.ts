import { EmbeddingError, type Embedder } from '@agent-backend/search';
import type { KnowledgeRepository } from './knowledge-repository.js';
import { splitDocument } from './split-document.js';

/** What one ingestion did. */
export type IngestOutcome =
  | { readonly status: 'ready'; readonly chunks: number; readonly embedded: boolean }
  | { readonly status: 'failed'; readonly error: string }
  /** The document is gone (deleted before the job ran, or not the job's user's). */
  | { readonly status: 'missing' };

export interface IngestOptions {
  /** Embeds the chunks; without one the document is searchable by its words only. */
  readonly embedder?: Embedder;
  /**
   * Whether a retryable embedding failure is final (the job's last attempt): then the document
   * is marked `failed` instead of the error being thrown for the queue to retry. @default true
   */
  readonly lastAttempt?: boolean;
  /**
   * The document is ready and is only embedded again: a failure leaves it as it is (its chunks
   * and vectors, `ready`) instead of marking it `failed`. @default false
   */
  readonly reembed?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Ingests one document: splits it with the preview's splitter at its defaults (so the preview
 * shows exactly what gets stored), embeds the chunks when an embedder is configured, and stores
 * them, marking the document `ready`. A split that fails, or an embeddings endpoint that refuses
 * the texts, marks it `failed` (a retry would fail again); an embeddings endpoint that is down
 * or overloaded throws, so the job queue retries, until the last attempt marks it `failed`.
 * A database error is thrown. Running it twice stores the same chunks once.
 */
export async function ingestDocument(
  repository: KnowledgeRepository,
  userId: string,
  documentId: string,
  options: IngestOptions = {},
): Promise<IngestOutcome> {
  const doc = await repository.getDocument(userId, documentId);
  if (!doc) return { status: 'missing' };
  // Storing chunks without vectors would only drop the ones it has.
  if (options.reembed && !options.embedder) {
    return { status: 'failed', error: 'no embeddings endpoint is configured' };
  }
  const fail = async (error: string): Promise<IngestOutcome> => {
    if (!options.reembed) await repository.markFailed(documentId, error);
    return { status: 'failed', error };
  };
  let chunks: string[];
  try {
    // Off the event loop: seconds of CPU for a 10 MB document (split-document.ts).
    chunks = (await splitDocument({ type: doc.type, content: doc.content })).map((c) => c.content);
  } catch (error) {
    return fail(error instanceof Error ? error.message : 'the document could not be split');
  }
  let embeddings;
  if (options.embedder && chunks.length > 0) {
    try {
      const vectors = await options.embedder.embed(chunks, options.signal);
      embeddings = { model: options.embedder.model, vectors };
    } catch (error) {
      if (!(error instanceof EmbeddingError)) throw error;
      if (error.retryable && options.lastAttempt === false) throw error;
      return fail(`embedding failed: ${error.message}`);
    }
  }
  const stored = await repository.storeChunks(documentId, chunks, embeddings);
  return stored
    ? { status: 'ready', chunks: chunks.length, embedded: embeddings !== undefined }
    : { status: 'missing' };
}
