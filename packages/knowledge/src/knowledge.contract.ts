import { afterAll, beforeAll, describe, expect } from 'vitest';
import { migrate, prepareVectorSearch, type Database } from '@agent-backend/store';
import { conceptEmbedding, startScriptedModel, type ScriptedModel } from '@agent-backend/testing';
import { createOpenAiEmbedder, type Embedder } from '@agent-backend/search';
import { ingestDocument } from './ingest.js';
import { KnowledgeRepository } from './knowledge-repository.js';
import { describeKnowledgeDocuments } from './knowledge-documents.contract.js';
import { describeKnowledgeEmbeddings } from './knowledge-embeddings.contract.js';
import { describeKnowledgeRanking } from './knowledge-ranking.contract.js';
import type { KnowledgeContract, KnowledgeContractOptions } from './knowledge-context.contract.js';

export type { KnowledgeContractOptions } from './knowledge-context.contract.js';

/**
 * The knowledge repository, ingestion and search against a real database; run by one test file
 * per dialect and vector storage so that all behave the same.
 */
export function describeKnowledgeContract(
  name: string,
  open: () => Promise<Database>,
  options: KnowledgeContractOptions,
): void {
  describe(`knowledge on ${name}`, () => {
    let db: Database;
    let repo: KnowledgeRepository;
    let endpoint: ScriptedModel;
    let embedder: Embedder;
    beforeAll(async () => {
      db = await open();
      await migrate(db);
      await prepareVectorSearch(db, options.vectorMode);
      repo = new KnowledgeRepository(db);
      endpoint = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
      embedder = createOpenAiEmbedder({
        baseUrl: endpoint.baseUrl,
        model: 'concepts-1',
        batchSize: 3,
        maxRetries: 0,
      });
    });
    afterAll(async () => {
      await db?.close();
      await endpoint?.close();
    });

    async function readyDocument(userId: string, baseId: string, content: string, type = 'text') {
      const doc = await repo.addDocument(userId, baseId, {
        name: 'faq.md',
        type: type as 'text',
        content,
      });
      if (!doc) throw new Error('base not found');
      expect(doc.status).toBe('pending');
      expect(await ingestDocument(repo, userId, doc.id)).toMatchObject({ status: 'ready' });
      return doc;
    }

    async function embeddedDocument(userId: string, baseId: string, content: string) {
      const doc = await repo.addDocument(userId, baseId, {
        name: 'fleet.md',
        type: 'text',
        content,
      });
      const outcome = await ingestDocument(repo, userId, doc!.id, { embedder });
      expect(outcome).toEqual({ status: 'ready', chunks: expect.any(Number), embedded: true });
      return doc!;
    }

    const contract: KnowledgeContract = {
      get db() {
        return db;
      },
      get repo() {
        return repo;
      },
      get endpoint() {
        return endpoint;
      },
      get embedder() {
        return embedder;
      },
      options,
      readyDocument,
      embeddedDocument,
    };
    describeKnowledgeDocuments(contract);
    describeKnowledgeEmbeddings(contract);
    describeKnowledgeRanking(contract);
  });
}
