import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiEmbedder, EmbeddingError, type Embedder } from '@agent-backend/search';
import {
  migrate,
  prepareVectorSearch,
  vectorSupport,
  type Database,
  type VectorMode,
} from '@agent-backend/store';
import { conceptEmbedding, startScriptedModel, type ScriptedModel } from '@agent-backend/testing';
import { InvalidCursorError } from './cursor.js';
import { MemoryRepository, MissingUserError } from './memory-repository.js';
import { searchMemories, searchSettings, vectorMemoryHits } from './memory-search.js';
import { InvalidMemoryError } from './memory-text.js';

export interface MemoryContractOptions {
  /** Passed to prepareVectorSearch. @default 'auto' */
  readonly vectorMode?: VectorMode;
  /** How embeddings must end up stored on this database. */
  readonly expectVector: 'pgvector' | 'array';
}

/**
 * The memory repository against a real database; run by one test file per dialect and vector
 * storage so that all behave the same.
 */
export function describeMemoryContract(
  name: string,
  open: () => Promise<Database>,
  options: MemoryContractOptions,
): void {
  describe(`memory on ${name}`, () => {
    let db: Database;
    let endpoint: ScriptedModel;
    let embedder: Embedder;
    /** Without embeddings: full text only. */
    let words: MemoryRepository;
    /** With the concept embeddings: hybrid. */
    let hybrid: MemoryRepository;
    const embeddingErrors: unknown[] = [];

    beforeAll(async () => {
      db = await open();
      await migrate(db);
      await prepareVectorSearch(db, options.vectorMode);
      endpoint = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
      embedder = createOpenAiEmbedder({
        baseUrl: endpoint.baseUrl,
        model: 'concepts-1',
        maxRetries: 0,
      });
      words = new MemoryRepository(db);
      hybrid = new MemoryRepository(db, {
        embedder,
        onEmbeddingError: (error) => embeddingErrors.push(error),
      });
    });
    afterAll(async () => {
      await db?.close();
      await endpoint?.close();
    });

    const rowsOf = async (userId: string) =>
      (
        await db.query<{ content: string }>(
          'SELECT content FROM memories WHERE user_id = $1 ORDER BY content',
          [userId],
        )
      ).rows.map((r) => r.content);

    it('stores embeddings in the column type this database supports', async () => {
      expect((await vectorSupport(db, 'memories')).kind).toBe(options.expectVector);
    });

    it("keeps every user's memories to that user, in every method", async () => {
      const saved = await words.save('alice', {
        text: 'Alice is allergic to peanuts.',
        tags: ['health'],
      });
      expect(saved.status).toBe('created');
      const id = saved.memory.id;
      expect(id).toMatch(/^mem_/);

      expect(await words.get('bob', id)).toBeUndefined();
      expect(await words.search('bob', 'peanuts allergic')).toEqual([]);
      expect(await hybrid.search('bob', 'peanuts allergic')).toEqual([]);
      expect(await words.list('bob')).toEqual({ memories: [], next_cursor: null });
      expect(await words.list('bob', { q: 'peanuts' })).toEqual({
        memories: [],
        next_cursor: null,
      });
      expect(await words.recent('bob', 5)).toEqual([]);
      expect(await words.delete('bob', id)).toBe(false);
      expect(await words.deleteAll('bob')).toBe(0);
      // The same text saved by another user is that user's own row, not an update of Alice's.
      const bobs = await words.save('bob', { text: 'Alice is allergic to peanuts.' });
      expect(bobs.status).toBe('created');
      expect(bobs.memory.id).not.toBe(id);

      expect(await words.get('alice', id)).toEqual(saved.memory);
      expect((await words.search('alice', 'peanuts')).map((h) => h.id)).toEqual([id]);
      expect((await words.list('alice')).memories).toEqual([saved.memory]);
      expect(await rowsOf('alice')).toEqual(['Alice is allergic to peanuts.']);
    });

    it('refuses to run any method without a user id', async () => {
      const calls: Array<() => Promise<unknown>> = [
        () => words.save('', { text: 'x' }),
        () => words.get('', 'mem_1'),
        () => words.delete('', 'mem_1'),
        () => words.deleteAll(''),
        () => words.list(''),
        () => words.recent('', 1),
        () => words.search('', 'x'),
        () => words.save(undefined as unknown as string, { text: 'x' }),
      ];
      for (const call of calls) await expect(call()).rejects.toBeInstanceOf(MissingUserError);
    });

    it('refuses empty and oversized memories', async () => {
      await expect(words.save('carl', { text: '  ?! ' })).rejects.toBeInstanceOf(
        InvalidMemoryError,
      );
      await expect(words.save('carl', { text: 'x'.repeat(2_001) })).rejects.toBeInstanceOf(
        InvalidMemoryError,
      );
      expect(await rowsOf('carl')).toEqual([]);
    });

    it('deletes for real: one memory, then all of a user', async () => {
      const a = await words.save('dora', { text: 'Dora rides a blue bicycle to work.' });
      const b = await words.save('dora', { text: 'Dora speaks Portuguese at home.' });
      const c = await words.save('erik', { text: 'Erik rides a blue bicycle too.' });
      expect(await words.delete('dora', a.memory.id)).toBe(true);
      expect(await words.delete('dora', a.memory.id)).toBe(false);
      expect(await words.get('dora', a.memory.id)).toBeUndefined();
      expect(await words.search('dora', 'bicycle')).toEqual([]);
      const { rows } = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM memories WHERE memory_id = $1',
        [a.memory.id],
      );
      expect(rows[0]!.n).toBe(0);

      expect(await words.deleteAll('dora')).toBe(1);
      expect(await rowsOf('dora')).toEqual([]);
      expect(await words.get('dora', b.memory.id)).toBeUndefined();
      expect(await words.get('erik', c.memory.id)).toEqual(c.memory);
    });

    it('updates the memory with the same text instead of adding a row', async () => {
      const first = await words.save('fay', {
        text: 'Prefers answers in French.',
        tags: ['language'],
        sessionId: 'sess_1',
        runId: 'run_1',
      });
      const again = await words.save('fay', {
        text: '  prefers ANSWERS in french ',
        tags: ['Preferences', 'language'],
        sessionId: 'sess_2',
        runId: 'run_2',
      });
      expect(again).toMatchObject({
        status: 'updated',
        previousText: 'Prefers answers in French.',
        memory: {
          id: first.memory.id,
          text: 'prefers ANSWERS in french',
          tags: ['preferences', 'language'],
          source_session_id: 'sess_2',
          source_run_id: 'run_2',
          created_at: first.memory.created_at,
        },
      });
      expect(again.memory.updated_at >= first.memory.updated_at).toBe(true);
      expect(await rowsOf('fay')).toEqual(['prefers ANSWERS in french']);
    });

    it('updates a near-duplicate by its words, and keeps different facts apart', async () => {
      const name = await words.save('gus', { text: "The user's daughter is called Maria" });
      const longer = await words.save('gus', {
        text: "The user's daughter is called Maria Lopez",
      });
      expect(longer).toMatchObject({ status: 'updated', memory: { id: name.memory.id } });
      const green = await words.save('gus', { text: 'Likes green tea in the morning' });
      const black = await words.save('gus', { text: 'Likes black tea in the evening' });
      expect(black.status).toBe('created');
      expect(black.memory.id).not.toBe(green.memory.id);
      expect(await rowsOf('gus')).toEqual([
        'Likes black tea in the evening',
        'Likes green tea in the morning',
        "The user's daughter is called Maria Lopez",
      ]);
    });

    it('updates a near-duplicate by meaning when embeddings are configured', async () => {
      // 5 of 7 words in common: not a duplicate by words, the same concepts by embedding.
      const car = await hybrid.save('hana', { text: 'My car is a red Volvo' });
      const again = await hybrid.save('hana', { text: 'My automobile is a red Volvo' });
      expect(again).toMatchObject({ status: 'updated', memory: { id: car.memory.id } });
      expect(await rowsOf('hana')).toEqual(['My automobile is a red Volvo']);
      // Without embeddings the same two texts are two memories.
      await words.save('ivan', { text: 'My car is a red Volvo' });
      expect((await words.save('ivan', { text: 'My automobile is a red Volvo' })).status).toBe(
        'created',
      );
      // Another user's similar memory is never the one updated.
      expect((await hybrid.save('jack', { text: 'My automobile is a red Volvo' })).status).toBe(
        'created',
      );
      expect(await rowsOf('hana')).toEqual(['My automobile is a red Volvo']);
    });

    it('pages through the memories newest first, also with q, and rejects a foreign cursor', async () => {
      const texts = Array.from(
        { length: 7 },
        (_, i) => `Project ${'abcdefg'[i]}ardvark milestone ${i} done`,
      );
      // Distinct words per memory, so none is a near-duplicate of another.
      const distinct = texts.map(
        (t, i) => `${t} ${['kiwi', 'lime', 'plum', 'pear', 'fig', 'date', 'yuzu'][i]} orchard${i}`,
      );
      for (const text of distinct) {
        await words.save('kira', { text });
        // PGlite's clock counts milliseconds: two saves in one would share `created_at`, and
        // their order would be their ids' (the cursor still pages through ties without repeats
        // or gaps, but "newest first" would not be this loop's order).
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await words.list('kira', { limit: 3, cursor });
        pages.push(page.memories.map((m) => m.text));
        cursor = page.next_cursor ?? undefined;
        // Updating a memory already listed moves no page boundary (ordered by creation).
        if (pages.length === 1) await words.save('kira', { text: distinct[6]!, tags: ['x'] });
      } while (cursor);
      expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
      expect(pages.flat()).toEqual([...distinct].reverse());

      const filtered = await words.list('kira', { q: 'ORCH kiwi', limit: 10 });
      expect(filtered.memories.map((m) => m.text)).toEqual([distinct[0]]);
      expect((await words.list('kira', { q: 'orch', limit: 10 })).memories).toHaveLength(7);
      expect((await words.list('kira', { q: 'x', limit: 10 })).memories).toHaveLength(1); // a tag
      expect((await words.list('kira', { q: "'&|!" })).memories).toHaveLength(7); // no words

      for (const bad of ['nope', Buffer.from('["x","y"]').toString('base64url'), '']) {
        await expect(words.list('kira', { cursor: bad })).rejects.toBeInstanceOf(
          InvalidCursorError,
        );
      }
      // Another user's cursor only positions in one's own list.
      const first = await words.list('kira', { limit: 1 });
      expect(await words.list('lena', { cursor: first.next_cursor! })).toEqual({
        memories: [],
        next_cursor: null,
      });
    });

    it('searches by words alone without embeddings, tags included', async () => {
      await words.save('mona', { text: 'Our cars are serviced every spring.', tags: ['fleet'] });
      await words.save('mona', { text: 'The office opens at nine on weekdays.' });
      const [hit] = await words.search('mona', 'when are the cars serviced?');
      expect(hit).toMatchObject({ text: 'Our cars are serviced every spring.', tags: ['fleet'] });
      expect(hit!.score).toBeGreaterThan(0);
      expect((await words.search('mona', 'fleet')).map((h) => h.text)).toEqual([
        'Our cars are serviced every spring.',
      ]);
      // No shared word, no hit: meaning needs embeddings.
      expect(await words.search('mona', 'automobile upkeep')).toEqual([]);
      expect(await words.search('mona', '?!')).toEqual([]);
    });

    it('finds a memory by meaning with embeddings, ranked with the words', async () => {
      await hybrid.save('nina', { text: 'Our cars are serviced every spring.' });
      await hybrid.save('nina', { text: 'The office opens at nine on weekdays.' });
      const { rows } = await db.query<{ model: string; dims: number }>(
        `SELECT embedding_model AS model, embedding_dims AS dims FROM memories
         WHERE user_id = 'nina'`,
      );
      expect(rows).toEqual([
        { model: 'concepts-1', dims: 128 },
        { model: 'concepts-1', dims: 128 },
      ]);
      const hits = await hybrid.search('nina', 'automobile upkeep', { limit: 1 });
      expect(hits.map((h) => h.text)).toEqual(['Our cars are serviced every spring.']);
      const both = await hybrid.search('nina', 'office automobile upkeep', { limit: 2 });
      expect(both).toHaveLength(2);
      expect(both[0]!.score).toBeGreaterThanOrEqual(both[1]!.score);
      expect(await hybrid.search('mallory', 'automobile upkeep')).toEqual([]);
    });

    it("scores the vector side by the cosine similarity of the model's vectors", async () => {
      const texts = ['Our cars are serviced every spring.', 'The car needs new tyres soon.'];
      for (const text of texts) await hybrid.save('quinn', { text });
      const query = 'automobile upkeep';
      const [vector] = await embedder.embed([query]);
      const hits = await vectorMemoryHits(
        db,
        { userId: 'quinn', query, embedding: { model: 'concepts-1', vector: vector! } },
        5,
        [],
        (await searchSettings(db)).support,
      );
      // The cosine of the vectors the endpoint answered, before the embedder scaled them.
      const cosine = (a: number[], b: number[]) =>
        a.reduce((sum, x, i) => sum + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b));
      const expected = texts
        .map((text) => ({ text, score: cosine(conceptEmbedding(text), conceptEmbedding(query)) }))
        .sort((a, b) => b.score - a.score);
      expect(expected[0]!.score).toBeGreaterThan(expected[1]!.score);
      expect(hits.map((h) => h.text)).toEqual(expected.map((e) => e.text));
      hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(expected[i]!.score, 5));
    });

    it('without pgvector, compares with word matches only past the exact-scan limit', async () => {
      await hybrid.save('olga', { text: 'Our cars are serviced every spring.' });
      const [vector] = await embedder.embed(['automobile upkeep']);
      const search = (query: string) =>
        searchMemories(db, {
          userId: 'olga',
          query,
          embedding: { model: 'concepts-1', vector: vector! },
          arrayExactMax: 0,
        });
      expect(await search('automobile upkeep')).toHaveLength(
        options.expectVector === 'pgvector' ? 1 : 0,
      );
      expect(await search('spring')).toHaveLength(1);
    });

    it('saves and searches on words when the embeddings endpoint fails', async () => {
      embeddingErrors.length = 0;
      endpoint.scriptEmbeddings('concepts-1', [
        { kind: 'error', status: 500, message: 'boom' },
        { kind: 'error', status: 500, message: 'boom' },
      ]);
      const saved = await hybrid.save('pia', { text: 'Pia plays the cello on Sundays.' });
      expect(saved.status).toBe('created');
      const { rows } = await db.query<{ model: string | null }>(
        `SELECT embedding_model AS model FROM memories WHERE memory_id = $1 AND user_id = 'pia'`,
        [saved.memory.id],
      );
      expect(rows).toEqual([{ model: null }]);
      expect((await hybrid.search('pia', 'cello')).map((h) => h.id)).toEqual([saved.memory.id]);
      expect(embeddingErrors).toEqual([expect.any(EmbeddingError), expect.any(EmbeddingError)]);
    });
  });
}
