import { describe, expect, it } from 'vitest';
import { createPgliteDatabase, migrate, prepareVectorSearch } from '@agent-backend/store';
import { conceptEmbedding, startScriptedModel } from '@agent-backend/testing';
import { createOpenAiEmbedder } from '@agent-backend/search';
import { ingestDocument } from './ingest.js';
import { KnowledgeRepository } from './knowledge-repository.js';
import { describeKnowledgeContract } from './knowledge.contract.js';
import { knowledgeSearcher } from './search-tool.js';

describeKnowledgeContract('PGlite with pgvector', () => createPgliteDatabase(), {
  expectVector: 'pgvector',
});
describeKnowledgeContract(
  'PGlite without pgvector',
  () => createPgliteDatabase({ vector: false }),
  {
    expectVector: 'array',
  },
);

describe('search while another replica changes how vectors are stored', () => {
  it('reads the column type again and searches on', async () => {
    const db = await createPgliteDatabase();
    const endpoint = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
    try {
      await migrate(db);
      expect((await prepareVectorSearch(db, 'auto')).kind).toBe('pgvector');
      const repo = new KnowledgeRepository(db);
      const embedder = createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'concepts-1' });
      const base = await repo.createBase('u', 'b');
      const doc = await repo.addDocument('u', base.id, {
        name: 'fleet',
        type: 'text',
        content: 'Our cars are serviced every spring.',
      });
      await ingestDocument(repo, 'u', doc!.id, { embedder });
      const search = knowledgeSearcher(db, { embedder });
      const query = { userId: 'u', knowledgeBaseIds: [base.id], query: 'automobile upkeep' };
      expect(await search(query)).toHaveLength(1); // this handle now believes "pgvector"
      await prepareVectorSearch(db, 'off'); // as a replica started with KNOWLEDGE_PGVECTOR=off
      expect(await search(query)).toHaveLength(1);
      await prepareVectorSearch(db, 'auto');
      expect(await search(query)).toHaveLength(1);
    } finally {
      await db.close();
      await endpoint.close();
    }
  });
});
