import { randomUUID } from 'node:crypto';
import type { KnowledgeBase, KnowledgeDocument } from '@agent-backend/protocol';
import type { Database, Queryable } from '@agent-backend/store';
import { toArrayLiterals } from '@agent-backend/search';

/** Document formats ingestion understands. */
export type DocumentType = KnowledgeDocument['type'];
/** Where a document is in ingestion; only `ready` documents are searched. */
export type DocumentStatus = KnowledgeDocument['status'];

/** A document with its source text, as the ingestion job reads it. */
export interface StoredDocument extends KnowledgeDocument {
  readonly user_id: string;
  readonly content: string;
}

interface BaseRow extends Record<string, unknown> {
  knowledge_base_id: string;
  name: string;
  description: string;
  created_at: Date;
}

interface DocumentRow extends Record<string, unknown> {
  document_id: string;
  knowledge_base_id: string;
  user_id: string;
  name: string;
  type: DocumentType;
  status: DocumentStatus;
  error: string | null;
  chunk_count: number;
  created_at: Date;
  updated_at: Date;
}

/**
 * Chunks per INSERT statement: bounds one statement's parameters (and the structured clone that
 * hands them to PGlite's thread on the embedded engine; bench/ingest-event-loop.ts).
 */
const INSERT_BATCH = 500;
/**
 * Vector numbers per INSERT statement (65 vectors of 1536): their text, about 20 characters a
 * number, is escaped and encoded by the driver on the event loop, so a statement keeps it to
 * about 2 MB (bench/ingest-event-loop.ts, with embeddings).
 */
const INSERT_VECTOR_NUMBERS = 100_000;

const DOCUMENT_COLUMNS = `document_id, knowledge_base_id, user_id, name, type, status, error,
  chunk_count, created_at, updated_at`;

function toBase(row: BaseRow): KnowledgeBase {
  return {
    id: row.knowledge_base_id,
    name: row.name,
    description: row.description,
    created_at: row.created_at.toISOString(),
  };
}

function toDocument(row: DocumentRow): KnowledgeDocument {
  return {
    id: row.document_id,
    knowledge_base_id: row.knowledge_base_id,
    name: row.name,
    type: row.type,
    status: row.status,
    error: row.error,
    chunk_count: row.chunk_count,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/**
 * Knowledge bases, their documents and chunks in the durable store. Every read and write takes
 * the owner's user id and filters by it, so a base id of another user behaves exactly like an id
 * that does not exist: `undefined`, `false`, nothing.
 */
export class KnowledgeRepository {
  constructor(private readonly db: Database) {}

  async createBase(userId: string, name: string, description = ''): Promise<KnowledgeBase> {
    const { rows } = await this.db.query<BaseRow>(
      `INSERT INTO knowledge_bases (knowledge_base_id, user_id, name, description)
       VALUES ($1, $2, $3, $4) RETURNING knowledge_base_id, name, description, created_at`,
      [`kb_${randomUUID()}`, userId, name, description],
    );
    return toBase(rows[0]!);
  }

  /** The user's bases, oldest first. */
  async listBases(userId: string): Promise<KnowledgeBase[]> {
    const { rows } = await this.db.query<BaseRow>(
      `SELECT knowledge_base_id, name, description, created_at FROM knowledge_bases
       WHERE user_id = $1 ORDER BY created_at, knowledge_base_id`,
      [userId],
    );
    return rows.map(toBase);
  }

  async getBase(userId: string, baseId: string): Promise<KnowledgeBase | undefined> {
    const { rows } = await this.db.query<BaseRow>(
      `SELECT knowledge_base_id, name, description, created_at FROM knowledge_bases
       WHERE user_id = $1 AND knowledge_base_id = $2`,
      [userId, baseId],
    );
    return rows[0] ? toBase(rows[0]) : undefined;
  }

  /** Deletes the base with its documents and chunks. @returns whether the user had it. */
  async deleteBase(userId: string, baseId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'DELETE FROM knowledge_bases WHERE user_id = $1 AND knowledge_base_id = $2',
      [userId, baseId],
    );
    return rowCount > 0;
  }

  /** Adds a `pending` document. @returns undefined when the user has no such base. */
  async addDocument(
    userId: string,
    baseId: string,
    doc: { name: string; type: DocumentType; content: string },
  ): Promise<KnowledgeDocument | undefined> {
    const { rows } = await this.db.query<DocumentRow>(
      `INSERT INTO knowledge_documents
         (document_id, knowledge_base_id, user_id, name, type, content, status)
       SELECT $1, knowledge_base_id, user_id, $4, $5, $6, 'pending' FROM knowledge_bases
       WHERE user_id = $2 AND knowledge_base_id = $3
       RETURNING ${DOCUMENT_COLUMNS}`,
      [`doc_${randomUUID()}`, userId, baseId, doc.name, doc.type, doc.content],
    );
    return rows[0] ? toDocument(rows[0]) : undefined;
  }

  /** The documents of a base, oldest first; undefined when the user has no such base. */
  async listDocuments(userId: string, baseId: string): Promise<KnowledgeDocument[] | undefined> {
    if (!(await this.getBase(userId, baseId))) return undefined;
    const { rows } = await this.db.query<DocumentRow>(
      `SELECT ${DOCUMENT_COLUMNS} FROM knowledge_documents
       WHERE user_id = $1 AND knowledge_base_id = $2 ORDER BY created_at, document_id`,
      [userId, baseId],
    );
    return rows.map(toDocument);
  }

  async getDocument(userId: string, documentId: string): Promise<StoredDocument | undefined> {
    const { rows } = await this.db.query<DocumentRow & { content: string }>(
      `SELECT ${DOCUMENT_COLUMNS}, content FROM knowledge_documents
       WHERE user_id = $1 AND document_id = $2`,
      [userId, documentId],
    );
    const row = rows[0];
    return row ? { ...toDocument(row), user_id: row.user_id, content: row.content } : undefined;
  }

  /** Deletes a document of a base with its chunks. @returns whether the user had it. */
  async deleteDocument(userId: string, baseId: string, documentId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `DELETE FROM knowledge_documents
       WHERE user_id = $1 AND knowledge_base_id = $2 AND document_id = $3`,
      [userId, baseId, documentId],
    );
    return rowCount > 0;
  }

  /**
   * Replaces the chunks of a document (with their embeddings, when given: one per chunk, null
   * for a chunk without one) and marks it `ready`, in one transaction, so a search never sees
   * half a document. A document deleted meanwhile stays deleted (nothing is written).
   * @returns whether the document still existed.
   */
  async storeChunks(
    documentId: string,
    chunks: readonly string[],
    embeddings?: {
      readonly model: string;
      readonly vectors: ReadonlyArray<readonly number[] | null>;
    },
  ): Promise<boolean> {
    if (embeddings && embeddings.vectors.length !== chunks.length) {
      throw new Error(`${embeddings.vectors.length} embeddings for ${chunks.length} chunks`);
    }
    return this.db.transaction(async (tx) => {
      const doc = await lockDocument(tx, documentId);
      if (!doc) return false;
      await tx.query('DELETE FROM knowledge_chunks WHERE document_id = $1', [documentId]);
      for (let start = 0, end = 0; start < chunks.length; start = end) {
        let numbers = 0;
        end = start;
        while (end < chunks.length && end - start < INSERT_BATCH) {
          numbers += embeddings?.vectors[end]?.length ?? 0;
          if (numbers > INSERT_VECTOR_NUMBERS && end > start) break;
          end++;
        }
        // One statement per batch: `unnest` with its 1-based ordinality gives the index. A
        // vector travels as array text (`{0.1,...}`, written off the event loop) and is cast to
        // real[], which a pgvector column takes by its assignment cast.
        await tx.query(
          `INSERT INTO knowledge_chunks
             (document_id, chunk_index, knowledge_base_id, user_id, content, embedding,
              embedding_model, embedding_dims)
           SELECT $1, (t.ord - 1 + $4)::integer, $2, $3, t.content, t.embedding::real[],
                  CASE WHEN t.embedding IS NULL THEN NULL ELSE $7::text END,
                  array_length(t.embedding::real[], 1)
           FROM unnest($5::text[], $6::text[]) WITH ORDINALITY AS t(content, embedding, ord)`,
          [
            documentId,
            doc.knowledge_base_id,
            doc.user_id,
            start,
            chunks.slice(start, end),
            embeddings
              ? await toArrayLiterals(embeddings.vectors.slice(start, end))
              : new Array<null>(end - start).fill(null),
            embeddings?.model ?? null,
          ],
        );
      }
      await tx.query(
        `UPDATE knowledge_documents SET status = 'ready', error = NULL, chunk_count = $2,
           updated_at = now() WHERE document_id = $1`,
        [documentId, chunks.length],
      );
      return true;
    });
  }

  /**
   * Ready documents, of every user, none of whose chunks has a vector of `model` (and of
   * `dimensions`, when given): embedded by another model or size, or not embedded at all.
   * Documents without chunks are left out: there is nothing to embed.
   */
  async documentsToReembed(
    model: string,
    dimensions?: number,
  ): Promise<Array<{ document_id: string; user_id: string }>> {
    const { rows } = await this.db.query<{ document_id: string; user_id: string }>(
      `SELECT d.document_id, d.user_id FROM knowledge_documents d
       WHERE d.status = 'ready' AND d.chunk_count > 0
         AND NOT EXISTS (
           SELECT 1 FROM knowledge_chunks c
           WHERE c.document_id = d.document_id AND c.embedding_model = $1
             AND ($2::int IS NULL OR c.embedding_dims = $2::int))
       ORDER BY d.created_at, d.document_id`,
      [model, dimensions ?? null],
    );
    return rows;
  }

  /** Marks a document `failed` with a reason its owner may read. */
  async markFailed(documentId: string, error: string): Promise<void> {
    await this.db.query(
      `UPDATE knowledge_documents SET status = 'failed', error = $2, updated_at = now()
       WHERE document_id = $1`,
      [documentId, error],
    );
  }
}

async function lockDocument(
  tx: Queryable,
  documentId: string,
): Promise<{ knowledge_base_id: string; user_id: string } | undefined> {
  const { rows } = await tx.query<{ knowledge_base_id: string; user_id: string }>(
    `SELECT knowledge_base_id, user_id FROM knowledge_documents WHERE document_id = $1 FOR UPDATE`,
    [documentId],
  );
  return rows[0];
}
