import { z } from 'zod';
import { JobTraceContext } from './job-trace.js';

/**
 * Body of `POST /api/knowledge-base/preview-chunks` (spec 4.7). The spec leaves open what happens
 * when the overlap is not smaller than the chunk size; such a split could never advance, so it is
 * rejected. An empty delimiter is rejected too: it would split between every character.
 */
export const PreviewChunksRequest = z
  .object({
    content: z.string(),
    /** Maximum characters per chunk. @default 1000 */
    chunk_size: z.number().int().positive().default(1000),
    /** Characters shared by consecutive chunks. @default 200 */
    chunk_overlap: z.number().int().nonnegative().default(200),
    /** @default '\n\n' */
    delimiter: z.string().min(1).default('\n\n'),
  })
  .superRefine((value, ctx) => {
    if (value.chunk_overlap >= value.chunk_size) {
      ctx.addIssue({
        code: 'custom',
        path: ['chunk_overlap'],
        message: 'chunk_overlap must be smaller than chunk_size',
      });
    }
  });
export type PreviewChunksRequest = z.infer<typeof PreviewChunksRequest>;
export type PreviewChunksRequestInput = z.input<typeof PreviewChunksRequest>;

/** One chunk of the preview (spec 2.7); `length` counts characters of `content`. */
export const ChunkPreviewItem = z.object({
  index: z.number().int().nonnegative(),
  content: z.string(),
  length: z.number().int().nonnegative(),
});
export type ChunkPreviewItem = z.infer<typeof ChunkPreviewItem>;

/** 200 answer of chunk preview; nothing is stored. `total` is the length of `chunks`. */
export const PreviewChunksResponse = z.object({
  chunks: z.array(ChunkPreviewItem),
  total: z.number().int().nonnegative(),
});
export type PreviewChunksResponse = z.infer<typeof PreviewChunksResponse>;

/**
 * Body of `POST /api/knowledge-bases`. Beyond the spec: a base groups the documents one
 * `search_knowledge_base` call may search; it belongs to the token's user.
 */
export const CreateKnowledgeBaseRequest = z.object({
  name: z.string().trim().min(1).max(200),
  /** @default '' */
  description: z.string().max(2000).default(''),
});
export type CreateKnowledgeBaseRequest = z.infer<typeof CreateKnowledgeBaseRequest>;

/** A knowledge base as the API answers with it; `created_at` is ISO 8601. */
export const KnowledgeBase = z.object({
  id: z.string().min(1),
  name: z.string(),
  description: z.string(),
  created_at: z.string(),
});
export type KnowledgeBase = z.infer<typeof KnowledgeBase>;

/** 200 answer of `GET /api/knowledge-bases`: the token's user's bases, oldest first. */
export const KnowledgeBaseList = z.object({ knowledge_bases: z.array(KnowledgeBase) });
export type KnowledgeBaseList = z.infer<typeof KnowledgeBaseList>;

/** The document formats ingestion reads. */
export const KnowledgeDocumentType = z.enum(['text', 'markdown', 'html']);
export type KnowledgeDocumentType = z.infer<typeof KnowledgeDocumentType>;

/**
 * Body of `POST /api/knowledge-bases/:id/documents`. Text and markdown are split by the same
 * splitter as the preview, with its defaults; markdown is indexed as written (its markup is
 * searchable text too); HTML is reduced to the text a reader sees first (paragraphs by block).
 */
export const AddDocumentRequest = z.object({
  name: z.string().trim().min(1).max(500),
  content: z.string().min(1),
  /** @default 'text' */
  type: KnowledgeDocumentType.default('text'),
});
export type AddDocumentRequest = z.infer<typeof AddDocumentRequest>;
export type AddDocumentRequestInput = z.input<typeof AddDocumentRequest>;

/**
 * A document of a base. `status` is `pending` until the worker has chunked it, then `ready`, or
 * `failed` with `error`. Only `ready` documents are searched.
 */
export const KnowledgeDocument = z.object({
  id: z.string().min(1),
  knowledge_base_id: z.string().min(1),
  name: z.string(),
  type: KnowledgeDocumentType,
  status: z.enum(['pending', 'ready', 'failed']),
  error: z.string().nullable(),
  chunk_count: z.number().int().nonnegative(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type KnowledgeDocument = z.infer<typeof KnowledgeDocument>;

/** 200 answer of `GET /api/knowledge-bases/:id/documents`, oldest first. */
export const KnowledgeDocumentList = z.object({ documents: z.array(KnowledgeDocument) });
export type KnowledgeDocumentList = z.infer<typeof KnowledgeDocumentList>;

/**
 * Data of a `kb-ingest` job (API to worker). Carries ids only: the content is in the durable
 * store, so a large document never travels through Redis.
 */
export const KbIngestJob = z.object({
  document_id: z.string().min(1),
  user_id: z.string().min(1),
  /**
   * Queued by a worker to embed an already ready document again (KNOWLEDGE_REEMBED): if that
   * fails, the document keeps its chunks and stays `ready`.
   */
  reembed: z.boolean().optional(),
  /** The trace context of the request that added the document (docs/operations.md, "Traces"). */
  trace: JobTraceContext.optional(),
});
export type KbIngestJob = z.infer<typeof KbIngestJob>;

/** Arguments of the `search_knowledge_base` agent tool. */
export const SearchKnowledgeBaseArgs = z.object({
  query: z.string().trim().min(1).describe('What to look for: keywords or a question'),
  /** @default 5 */
  limit: z.number().int().min(1).max(20).default(5).describe('Most chunks to return'),
});
export type SearchKnowledgeBaseArgs = z.infer<typeof SearchKnowledgeBaseArgs>;

/**
 * One search hit: the chunk, where it comes from, and its score, higher is better: the full-text
 * `ts_rank` without embeddings, the reciprocal-rank-fusion score of the full-text and vector
 * ranks with them (docs/knowledge-base.md).
 */
export const KnowledgeSearchHit = z.object({
  knowledge_base_id: z.string(),
  document_id: z.string(),
  document_name: z.string(),
  chunk_index: z.number().int().nonnegative(),
  content: z.string(),
  score: z.number(),
});
export type KnowledgeSearchHit = z.infer<typeof KnowledgeSearchHit>;

/** Most knowledge bases one `POST /api/knowledge-bases/search` searches. */
export const MAX_SEARCH_KNOWLEDGE_BASES = 50;

/**
 * `POST /api/knowledge-bases/search` (beyond the spec): the search the agent's
 * `search_knowledge_base` tool runs, for a client. Ids of bases that are not the token's user's
 * are searched as empty bases, exactly as by the tool (docs/knowledge-base.md).
 */
export const SearchKnowledgeBasesRequest = z.object({
  query: z.string().trim().min(1).max(4000),
  knowledge_base_ids: z.array(z.string().min(1).max(200)).min(1).max(MAX_SEARCH_KNOWLEDGE_BASES),
  /** Most hits to answer with. */
  limit: z.number().int().min(1).max(50).default(5),
});
export type SearchKnowledgeBasesRequest = z.infer<typeof SearchKnowledgeBasesRequest>;

/** The answer of `POST /api/knowledge-bases/search`: the hits, best first. */
export const SearchKnowledgeBasesResponse = z.object({ results: z.array(KnowledgeSearchHit) });
export type SearchKnowledgeBasesResponse = z.infer<typeof SearchKnowledgeBasesResponse>;
