import { randomUUID } from 'node:crypto';
import { toArrayLiteral, type Embedder, type QueryEmbedding } from '@agent-backend/search';
import type { Memory, MemoryList } from '@agent-backend/protocol';
import type { Database, Queryable } from '@agent-backend/store';
import { decodeCursor, encodeCursor } from './cursor.js';
import {
  lexicalMemoryHits,
  MEMORY_COLUMNS,
  searchMemories,
  searchSettings,
  toMemory,
  vectorMemoryHits,
  type MemoryHit,
  type MemoryRow,
} from './memory-search.js';
import {
  checkMemoryText,
  cleanTags,
  MAX_STORED_TAGS,
  memoryKey,
  memoryWords,
  wordSimilarity,
} from './memory-text.js';

/**
 * A save whose words overlap an existing memory's this much (shared words over all words of
 * the two, after {@link normalizeMemoryText}) updates that memory instead of adding one.
 * Conservative on purpose: merging two different facts loses one, a missed duplicate only costs
 * a row. "Her name is Alice" and "Her name is Alice Smith" (4 of 5 words) merge; "Likes green
 * tea" and "Likes black tea" (2 of 4) do not.
 */
export const NEAR_DUPLICATE_WORDS = 0.8;

/**
 * A save whose embedding has at least this cosine similarity with an existing memory's (same
 * model and size) updates that memory instead of adding one: the same fact in other words.
 */
export const NEAR_DUPLICATE_COSINE = 0.95;

/** Memories whose words are compared with a save's: the best full-text matches. */
const NEAR_DUPLICATE_CANDIDATES = 20;

/** Characters of a query that are searched (and embedded): a long message is cut. */
export const MAX_QUERY_CHARS = 2_000;

export interface MemoryRepositoryOptions {
  /** Embeds memories and queries; without one, search is full-text only. */
  readonly embedder?: Embedder;
  /**
   * Told when a text could not be embedded: the memory is saved (or the search runs) on its
   * words alone.
   */
  readonly onEmbeddingError?: (error: unknown) => void;
}

/** What one save wrote. */
export interface SaveOutcome {
  /** `created`: a new row; `updated`: a near-duplicate of `memory` was there and now says this. */
  readonly status: 'created' | 'updated';
  readonly memory: Memory;
  /** The text the updated memory had before. */
  readonly previousText?: string;
}

export interface SaveInput {
  readonly text: string;
  /** @default [] */
  readonly tags?: readonly string[];
  /** Where the save comes from (the run that called `memory_save`). */
  readonly sessionId?: string;
  readonly runId?: string;
}

export interface ListOptions {
  /** Keeps memories containing every word of `q` (as word prefixes, in the text or tags). */
  readonly q?: string;
  /** The `next_cursor` of the previous page. */
  readonly cursor?: string;
  /** @default 20 */
  readonly limit?: number;
}

/** Raised when a user id is missing: no statement on memories runs without an owner. */
export class MissingUserError extends TypeError {
  constructor() {
    super('memories are always read and written for one user: a user id is required');
    this.name = 'MissingUserError';
  }
}

function owner(userId: string): string {
  if (typeof userId !== 'string' || userId.length === 0) throw new MissingUserError();
  return userId;
}

/**
 * Long-term memories in the durable store, one row per memory. Every method takes the owner's
 * user id first and every statement it runs filters by `user_id`, so a memory of another user
 * behaves exactly like one that does not exist; no method reads memories without a user id.
 *
 * Saves of one user are serialized by a transaction-scoped advisory lock on the user, so two
 * replicas saving at once never decide on a stale read: each save sees the rows the previous
 * one wrote, distinct memories each get their row, and near-duplicates merge into one.
 */
export class MemoryRepository {
  private readonly embedder: Embedder | undefined;

  constructor(
    private readonly db: Database,
    private readonly options: MemoryRepositoryOptions = {},
  ) {
    this.embedder = options.embedder;
  }

  /** Embeds one text; undefined without an embedder, or when the endpoint failed (reported). */
  private async embed(text: string, signal?: AbortSignal): Promise<QueryEmbedding | undefined> {
    if (!this.embedder) return undefined;
    try {
      const [vector] = await this.embedder.embed([text], signal);
      return vector ? { model: this.embedder.model, vector } : undefined;
    } catch (error) {
      if (signal?.aborted) throw error;
      this.options.onEmbeddingError?.(error);
      return undefined;
    }
  }

  /**
   * Saves a memory of `userId`. When the user already has the same text (normalized), or a
   * near-duplicate ({@link NEAR_DUPLICATE_WORDS}, {@link NEAR_DUPLICATE_COSINE}), that memory
   * is updated to the new text instead (its tags merged, the new ones first, and its source set
   * to this save); otherwise a row is added.
   * @throws InvalidMemoryError for an empty or too long text.
   */
  async save(userId: string, input: SaveInput, signal?: AbortSignal): Promise<SaveOutcome> {
    owner(userId);
    const text = checkMemoryText(input.text);
    const tags = cleanTags(input.tags ?? []);
    const key = memoryKey(text);
    // Outside the transaction: a slow endpoint must not hold the user's lock.
    const embedding = await this.embed(text, signal);
    const settings = await searchSettings(this.db);
    return this.db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(hashtext('agent-backend:memories:' || $1))`, [
        userId,
      ]);
      const match = await this.findDuplicate(tx, userId, text, key, embedding, settings);
      const source = [input.sessionId ?? null, input.runId ?? null];
      const vector = embedding ? [toArrayLiteral(embedding.vector), embedding.model] : [null, null];
      if (match) {
        const merged = cleanTags([...tags, ...match.tags]).slice(0, MAX_STORED_TAGS);
        // The same text keeps its vector when this one could not be embedded; other text not.
        const keepVector = !embedding && match.key === key;
        const { rows } = await tx.query<MemoryRow>(
          `UPDATE memories m SET content = $3, content_key = $4, tags = $5::jsonb,
             source_session_id = $6, source_run_id = $7, updated_at = now()
             ${keepVector ? '' : ', embedding = $8::real[], embedding_model = $9, embedding_dims = array_length($8::real[], 1)'}
           WHERE m.user_id = $1 AND m.memory_id = $2
           RETURNING ${MEMORY_COLUMNS}`,
          [
            userId,
            match.id,
            text,
            key,
            JSON.stringify(merged),
            ...source,
            ...(keepVector ? [] : vector),
          ],
        );
        return { status: 'updated', memory: toMemory(rows[0]!), previousText: match.text };
      }
      const { rows } = await tx.query<MemoryRow>(
        `INSERT INTO memories AS m (user_id, memory_id, content, content_key, tags,
           source_session_id, source_run_id, embedding, embedding_model, embedding_dims)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8::real[], $9, array_length($8::real[], 1))
         RETURNING ${MEMORY_COLUMNS}`,
        [userId, `mem_${randomUUID()}`, text, key, JSON.stringify(tags), ...source, ...vector],
      );
      return { status: 'created', memory: toMemory(rows[0]!) };
    });
  }

  /**
   * The memory a save of `text` updates, if any: the one with the same key, else the most
   * similar by embedding at or above {@link NEAR_DUPLICATE_COSINE}, else the one sharing the
   * most words at or above {@link NEAR_DUPLICATE_WORDS} among the best full-text matches.
   */
  private async findDuplicate(
    tx: Queryable,
    userId: string,
    text: string,
    key: string,
    embedding: QueryEmbedding | undefined,
    settings: Awaited<ReturnType<typeof searchSettings>>,
  ): Promise<{ id: string; text: string; tags: string[]; key: string } | undefined> {
    const { rows } = await tx.query<{ memory_id: string; content: string; tags: string[] }>(
      `SELECT memory_id, content, tags FROM memories WHERE user_id = $1 AND content_key = $2`,
      [userId, key],
    );
    if (rows[0]) return { id: rows[0].memory_id, text: rows[0].content, tags: rows[0].tags, key };
    const options = { userId, query: text };
    const lexical = await lexicalMemoryHits(tx, options, NEAR_DUPLICATE_CANDIDATES, settings);
    const found = (hit: MemoryHit) => ({ id: hit.id, text: hit.text, tags: hit.tags, key: '' });
    if (embedding) {
      const [nearest] = await vectorMemoryHits(
        tx,
        { ...options, embedding },
        1,
        lexical,
        settings.support,
      );
      if (nearest && nearest.score >= NEAR_DUPLICATE_COSINE) return found(nearest);
    }
    const words = memoryWords(text);
    let best: MemoryHit | undefined;
    let bestScore = 0;
    for (const hit of lexical) {
      const score = wordSimilarity(words, memoryWords(hit.text));
      if (score > bestScore) [best, bestScore] = [hit, score];
    }
    return best && bestScore >= NEAR_DUPLICATE_WORDS ? found(best) : undefined;
  }

  /** One memory of the user; undefined when the user has no memory with that id. */
  async get(userId: string, memoryId: string): Promise<Memory | undefined> {
    const { rows } = await this.db.query<MemoryRow>(
      `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE m.user_id = $1 AND m.memory_id = $2`,
      [owner(userId), memoryId],
    );
    return rows[0] ? toMemory(rows[0]) : undefined;
  }

  /** Deletes one memory. @returns whether the user had it (another user's id: false). */
  async delete(userId: string, memoryId: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'DELETE FROM memories WHERE user_id = $1 AND memory_id = $2',
      [owner(userId), memoryId],
    );
    return rowCount > 0;
  }

  /** Deletes every memory of the user. @returns how many there were. */
  async deleteAll(userId: string): Promise<number> {
    const { rowCount } = await this.db.query('DELETE FROM memories WHERE user_id = $1', [
      owner(userId),
    ]);
    return rowCount;
  }

  /**
   * The user's memories, newest first (by creation, so a page boundary never moves when a
   * memory is updated), `limit` at a time. The cursor is opaque: the position after the last
   * memory of the page.
   * @throws InvalidCursorError for a cursor this method did not make.
   */
  async list(userId: string, options: ListOptions = {}): Promise<MemoryList> {
    owner(userId);
    const limit = Math.max(1, Math.min(options.limit ?? 20, 100));
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
    const words = options.q ? [...memoryWords(options.q)].slice(0, 32) : [];
    const params: unknown[] = [userId, limit + 1];
    const filters: string[] = [];
    if (words.length > 0) {
      params.push(words.map((w) => `'${w}':*`).join(' & '));
      filters.push(`m.tsv @@ to_tsquery('simple', $${params.length})`);
    }
    if (after) {
      params.push(after.createdAt, after.id);
      filters.push(
        `(m.created_at, m.memory_id) < ($${params.length - 1}::timestamptz, $${params.length})`,
      );
    }
    const { rows } = await this.db.query<MemoryRow & { created_key: string }>(
      `SELECT ${MEMORY_COLUMNS},
         to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_key
       FROM memories m
       WHERE m.user_id = $1 ${filters.map((f) => `AND ${f}`).join(' ')}
       ORDER BY m.created_at DESC, m.memory_id DESC
       LIMIT $2`,
      params,
    );
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      memories: page.map(toMemory),
      next_cursor:
        rows.length > limit && last
          ? encodeCursor({ createdAt: last.created_key, id: last.memory_id })
          : null,
    };
  }

  /** The user's most recently updated memories, newest first. */
  async recent(userId: string, limit: number): Promise<Memory[]> {
    const { rows } = await this.db.query<MemoryRow>(
      `SELECT ${MEMORY_COLUMNS} FROM memories m WHERE m.user_id = $1
       ORDER BY m.updated_at DESC, m.memory_id DESC LIMIT $2`,
      [owner(userId), limit],
    );
    return rows.map(toMemory);
  }

  /**
   * Searches the user's memories for `query` (its first {@link MAX_QUERY_CHARS} characters),
   * best first, at most `limit` (1–100, default 5): hybrid when an embedder is configured and
   * the query could be embedded, else full text alone.
   */
  async search(
    userId: string,
    query: string,
    options: { readonly limit?: number; readonly signal?: AbortSignal } = {},
  ): Promise<MemoryHit[]> {
    owner(userId);
    const text = query.slice(0, MAX_QUERY_CHARS);
    const limit = Math.max(1, Math.min(options.limit ?? 5, 100));
    const embedding = text.trim() ? await this.embed(text, options.signal) : undefined;
    return searchMemories(this.db, { userId, query: text, limit, embedding });
  }
}
