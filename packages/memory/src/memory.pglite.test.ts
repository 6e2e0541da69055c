import { describe, expect, it } from 'vitest';
import { createOpenAiEmbedder } from '@agent-backend/search';
import { createPgliteDatabase, migrate, prepareVectorSearch } from '@agent-backend/store';
import { conceptEmbedding, startScriptedModel } from '@agent-backend/testing';
import { MemoryRepository } from './memory-repository.js';
import { describeMemoryContract } from './memory.contract.js';

describeMemoryContract('PGlite with pgvector', () => createPgliteDatabase(), {
  expectVector: 'pgvector',
});
describeMemoryContract('PGlite without pgvector', () => createPgliteDatabase({ vector: false }), {
  expectVector: 'array',
});

describe('memory search while another replica changes how vectors are stored', () => {
  it('reads the column type again and searches on', async () => {
    const db = await createPgliteDatabase();
    const endpoint = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
    try {
      await migrate(db);
      expect((await prepareVectorSearch(db, 'auto')).kind).toBe('pgvector');
      const embedder = createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'concepts-1' });
      const repo = new MemoryRepository(db, { embedder });
      await repo.save('u', { text: 'Our cars are serviced every spring.' });
      expect(await repo.search('u', 'automobile upkeep')).toHaveLength(1); // believes "pgvector"
      await prepareVectorSearch(db, 'off'); // as a replica started with KNOWLEDGE_PGVECTOR=off
      expect(await repo.search('u', 'automobile upkeep')).toHaveLength(1);
      await repo.save('u', { text: 'The office opens at nine.' });
      await prepareVectorSearch(db, 'auto');
      expect(await repo.search('u', 'automobile upkeep', { limit: 1 })).toHaveLength(1);
    } finally {
      await db.close();
      await endpoint.close();
    }
  });
});
