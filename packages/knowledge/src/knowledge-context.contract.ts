import type { Database, VectorMode } from '@agent-backend/store';
import type { ScriptedModel } from '@agent-backend/testing';
import type { Embedder } from '@agent-backend/search';
import type { KnowledgeRepository } from './knowledge-repository.js';

export const REFUNDS =
  'Refunds are paid within five business days.\n\nShipping takes two weeks to Iceland.';

export const CARS = 'Our cars are serviced every spring by the workshop.';
export const SHOP = 'The shop opens at nine and closes at five on weekdays.';

export interface KnowledgeContractOptions {
  /** Passed to prepareVectorSearch. @default 'auto' */
  readonly vectorMode?: VectorMode;
  /** How embeddings must end up stored on this database. */
  readonly expectVector: 'pgvector' | 'array';
}

/** What each part of the knowledge contract gets from its setup (set before the first test). */
export interface KnowledgeContract {
  readonly db: Database;
  readonly repo: KnowledgeRepository;
  /** The scripted embeddings endpoint (concept embeddings). */
  readonly endpoint: ScriptedModel;
  /** An embedder on `endpoint`, three texts a batch, no retries. */
  readonly embedder: Embedder;
  readonly options: KnowledgeContractOptions;
  /** Adds a document to the user's base and ingests it (expects it ready). */
  readyDocument(
    userId: string,
    baseId: string,
    content: string,
    type?: string,
  ): Promise<{ id: string }>;
  /** Adds a document and ingests it with `embedder` (expects every chunk embedded). */
  embeddedDocument(userId: string, baseId: string, content: string): Promise<{ id: string }>;
}
