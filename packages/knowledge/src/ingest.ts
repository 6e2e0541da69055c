import { splitText } from '@agent-backend/chunking';
import type { KnowledgeRepository } from './knowledge-repository.js';

/** What one ingestion did. */
export type IngestOutcome =
  | { readonly status: 'ready'; readonly chunks: number }
  | { readonly status: 'failed'; readonly error: string }
  /** The document is gone (deleted before the job ran, or not the job's user's). */
  | { readonly status: 'missing' };

/**
 * Ingests one document: splits it with the preview's splitter at its defaults (so the preview
 * shows exactly what gets stored) and stores the chunks, marking the document `ready`. A split
 * that fails marks it `failed` (a retry would fail again); a database error is thrown, so the
 * job queue retries it. Running it twice stores the same chunks once.
 */
export async function ingestDocument(
  repository: KnowledgeRepository,
  userId: string,
  documentId: string,
): Promise<IngestOutcome> {
  const doc = await repository.getDocument(userId, documentId);
  if (!doc) return { status: 'missing' };
  let chunks: string[];
  try {
    chunks = splitText(doc.content).map((c) => c.content);
  } catch (error) {
    const message = error instanceof Error ? error.message : 'the document could not be split';
    await repository.markFailed(documentId, message);
    return { status: 'failed', error: message };
  }
  const stored = await repository.storeChunks(documentId, chunks);
  return stored ? { status: 'ready', chunks: chunks.length } : { status: 'missing' };
}
