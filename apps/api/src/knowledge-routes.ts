import { ChunkLimitError } from '@agent-backend/chunking';
import { AppError } from '@agent-backend/http-server';
import { jobTraceContext } from '@agent-backend/jobs';
import {
  KB_INGEST_ATTEMPTS,
  KB_INGEST_QUEUE,
  KnowledgeRepository,
  splitDocument,
  type KnowledgeSearcher,
} from '@agent-backend/knowledge';
import {
  AddDocumentRequest,
  CreateKnowledgeBaseRequest,
  KnowledgeBase,
  KnowledgeBaseList,
  KnowledgeDocument,
  KnowledgeDocumentList,
  PreviewChunksRequest,
  PreviewChunksResponse,
  SearchKnowledgeBasesRequest,
  SearchKnowledgeBasesResponse,
  type KbIngestJob,
} from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * Largest preview request body: 10 MiB, instead of the service-wide 1 MiB, because previewing
 * a whole document before ingesting it is the point of the endpoint. Larger bodies get 413
 * `payload_too_large` before they are read to the end.
 */
export const PREVIEW_BODY_LIMIT = 10 * 1024 * 1024;

/**
 * Most chunks one preview answers with. Overlap repeats text, so a small `chunk_size` with a
 * large `chunk_overlap` could turn 10 MiB into millions of chunks and gigabytes of JSON; past
 * this the answer is 413 and the split stops early. 20,000 covers a full 10 MiB body at the
 * defaults (about 13,000 chunks).
 */
export const MAX_PREVIEW_CHUNKS = 20_000;

/** Most characters all chunks of one preview hold together (twice the largest body). */
export const MAX_PREVIEW_CHARACTERS = 2 * PREVIEW_BODY_LIMIT;

/**
 * `POST /api/knowledge-base/preview-chunks` (spec 4.7): shows how a text would be split, with
 * the same splitter ingestion uses, and stores nothing. Requires an access token, checked when
 * the request arrives so that an anonymous client cannot make the server read and parse 10 MiB.
 * The split rules are in docs/knowledge-base.md.
 */
export function registerKnowledgeRoutes(
  context: Pick<ServiceContext, 'app' | 'requireUser' | 'engines' | 'limits'>,
  searchKnowledge: KnowledgeSearcher,
): void {
  const { app, requireUser } = context;
  registerKnowledgeBaseRoutes(context, searchKnowledge);
  app.post(
    '/api/knowledge-base/preview-chunks',
    {
      body: PreviewChunksRequest,
      onRequest: requireUser,
      bodyLimit: PREVIEW_BODY_LIMIT,
      doc: {
        tag: 'knowledge',
        summary: 'Show how a text would be split into chunks',
        description:
          'The splitter ingestion uses; nothing is stored. Bodies up to 10 MiB; a split of more than ' +
          '20,000 chunks (or twice the body in characters) is 413 `payload_too_large`.',
        responses: { 200: { description: 'The chunks.', json: PreviewChunksResponse } },
      },
    },
    async (request) => {
      const body = request.body;
      let chunks;
      try {
        // In the splitting worker thread: up to 10 MiB of text would stall every request.
        chunks = await splitDocument({
          type: 'text',
          content: body.content,
          options: {
            chunkSize: body.chunk_size,
            chunkOverlap: body.chunk_overlap,
            delimiter: body.delimiter,
            maxChunks: MAX_PREVIEW_CHUNKS,
            maxTotalLength: MAX_PREVIEW_CHARACTERS,
          },
        });
      } catch (error) {
        if (!(error instanceof ChunkLimitError)) throw error;
        throw new AppError(
          'payload_too_large',
          `${error.message}; use a larger chunk_size, a smaller chunk_overlap or less content`,
          { max_chunks: MAX_PREVIEW_CHUNKS, max_total_length: MAX_PREVIEW_CHARACTERS },
        );
      }
      return {
        chunks: chunks.map(({ index, content, length }) => ({ index, content, length })),
        total: chunks.length,
      } satisfies PreviewChunksResponse;
    },
  );
}

const baseNotFound = () => new AppError('not_found', 'unknown knowledge base');

/**
 * Knowledge bases and their documents (beyond the spec), all under the token's user:
 * a base or document of another user answers 404 exactly like one that does not exist. Adding a
 * document stores it `pending` and queues `kb-ingest`; the worker chunks it (docs/knowledge-base.md).
 */
function registerKnowledgeBaseRoutes(
  {
    app,
    requireUser,
    engines,
    limits,
  }: Pick<ServiceContext, 'app' | 'requireUser' | 'engines' | 'limits'>,
  searchKnowledge: KnowledgeSearcher,
): void {
  const repo = new KnowledgeRepository(engines.db);

  // The tool's search for clients: bases of other users are searched as empty ones, so nothing
  // tells them from unknown ids. A slow embeddings endpoint is bounded by EMBEDDINGS_TIMEOUT_MS.
  const search = {
    body: SearchKnowledgeBasesRequest,
    preHandler: requireUser,
    limit: limits.rate('knowledge_search'),
    doc: {
      tag: 'knowledge',
      summary: "Search the caller's knowledge bases",
      description: "Ids of other users' bases are searched as empty bases.",
      responses: {
        200: { description: 'The hits, best first.', json: SearchKnowledgeBasesResponse },
      },
    },
  };
  app.post('/api/knowledge-bases/search', search, async (request) => {
    const body = request.body;
    const results = await searchKnowledge({
      userId: request.userId,
      knowledgeBaseIds: [...new Set(body.knowledge_base_ids)],
      query: body.query,
      limit: body.limit,
    });
    return { results } satisfies SearchKnowledgeBasesResponse;
  });

  const create = {
    body: CreateKnowledgeBaseRequest,
    preHandler: requireUser,
    doc: {
      tag: 'knowledge',
      summary: 'Create a knowledge base',
      responses: { 201: { description: 'Created.', json: KnowledgeBase } },
    },
  };
  app.post('/api/knowledge-bases', create, async (request, reply) => {
    const body = request.body;
    return reply
      .status(201)
      .send(await repo.createBase(request.userId, body.name, body.description));
  });

  app.get(
    '/api/knowledge-bases',
    {
      preHandler: requireUser,
      doc: {
        tag: 'knowledge',
        summary: "List the caller's knowledge bases",
        responses: { 200: { description: 'Oldest first.', json: KnowledgeBaseList } },
      },
    },
    async (request) => {
      return { knowledge_bases: await repo.listBases(request.userId) } satisfies KnowledgeBaseList;
    },
  );

  app.delete(
    '/api/knowledge-bases/:id',
    {
      preHandler: requireUser,
      doc: {
        tag: 'knowledge',
        summary: 'Delete a knowledge base and its documents',
        parameters: [{ in: 'path', name: 'id', description: 'The knowledge base.' }],
        responses: { 204: { description: 'Deleted.' } },
        errors: ['not_found'],
      },
    },
    async (request, reply) => {
      if (!(await repo.deleteBase(request.userId, request.params.id))) throw baseNotFound();
      return reply.status(204).send();
    },
  );

  app.post(
    '/api/knowledge-bases/:id/documents',
    {
      body: AddDocumentRequest,
      onRequest: requireUser,
      limit: limits.rate('knowledge_upload'),
      bodyLimit: PREVIEW_BODY_LIMIT,
      doc: {
        tag: 'knowledge',
        summary: 'Add a document (ingested in the background)',
        description:
          'Stored `pending` and queued; the worker chunks and indexes it (`ready`, or `failed` with ' +
          '`error`). Bodies up to 10 MiB.',
        parameters: [{ in: 'path', name: 'id', description: 'The knowledge base.' }],
        responses: { 202: { description: 'Accepted, `pending`.', json: KnowledgeDocument } },
        errors: ['not_found'],
      },
    },
    async (request, reply) => {
      const body = request.body;
      const userId = request.userId;
      const doc = await repo.addDocument(userId, request.params.id, body);
      if (!doc) throw baseNotFound();
      try {
        const trace = jobTraceContext();
        const job: KbIngestJob = {
          document_id: doc.id,
          user_id: userId,
          ...(trace ? { trace } : {}),
        };
        await engines.jobs.add(KB_INGEST_QUEUE, job, {
          jobId: doc.id,
          attempts: KB_INGEST_ATTEMPTS,
        });
      } catch (error) {
        // Not queued: nothing would ever ingest it, so it must not stay `pending`.
        await repo.deleteDocument(userId, doc.knowledge_base_id, doc.id);
        throw error;
      }
      return reply.status(202).send(doc);
    },
  );

  app.get(
    '/api/knowledge-bases/:id/documents',
    {
      preHandler: requireUser,
      doc: {
        tag: 'knowledge',
        summary: 'List the documents of a knowledge base',
        parameters: [{ in: 'path', name: 'id', description: 'The knowledge base.' }],
        responses: { 200: { description: 'Oldest first.', json: KnowledgeDocumentList } },
        errors: ['not_found'],
      },
    },
    async (request) => {
      const documents = await repo.listDocuments(request.userId, request.params.id);
      if (!documents) throw baseNotFound();
      return { documents } satisfies KnowledgeDocumentList;
    },
  );

  app.delete(
    '/api/knowledge-bases/:id/documents/:doc_id',
    {
      preHandler: requireUser,
      doc: {
        tag: 'knowledge',
        summary: 'Delete a document',
        parameters: [
          { in: 'path', name: 'id', description: 'The knowledge base.' },
          { in: 'path', name: 'doc_id', description: 'The document.' },
        ],
        responses: { 204: { description: 'Deleted.' } },
        errors: ['not_found'],
      },
    },
    async (request, reply) => {
      const { id, doc_id: documentId } = request.params;
      if (!(await repo.deleteDocument(request.userId, id, documentId)))
        throw new AppError('not_found', 'unknown document');
      return reply.status(204).send();
    },
  );
}
