import type {
  AddDocumentRequestInput,
  ChunkPreviewItem,
  KnowledgeBase,
  KnowledgeBaseList,
  KnowledgeDocument,
  KnowledgeDocumentList,
  KnowledgeSearchHit,
  PreviewChunksRequestInput,
} from '@agent-backend/protocol';
import type { CallOptions, JsonRequest } from './call-options.js';

/** The user's knowledge bases (`/api/knowledge-bases`): bases, documents, search, chunk preview. */
export function knowledgeBasesApi(json: JsonRequest) {
  return {
    list: async (options?: CallOptions): Promise<KnowledgeBase[]> =>
      (await json<KnowledgeBaseList>('GET', '/api/knowledge-bases', options)).knowledge_bases,
    create: (
      base: { name: string; description?: string },
      options?: CallOptions,
    ): Promise<KnowledgeBase> => json('POST', '/api/knowledge-bases', { ...options, body: base }),
    delete: (id: string, options?: CallOptions): Promise<void> =>
      json('DELETE', `/api/knowledge-bases/${encodeURIComponent(id)}`, options),
    documents: async (id: string, options?: CallOptions): Promise<KnowledgeDocument[]> =>
      (
        await json<KnowledgeDocumentList>(
          'GET',
          `/api/knowledge-bases/${encodeURIComponent(id)}/documents`,
          options,
        )
      ).documents,
    addDocument: (
      id: string,
      document: AddDocumentRequestInput,
      options?: CallOptions,
    ): Promise<KnowledgeDocument> =>
      json('POST', `/api/knowledge-bases/${encodeURIComponent(id)}/documents`, {
        ...options,
        body: document,
      }),
    deleteDocument: (id: string, documentId: string, options?: CallOptions): Promise<void> =>
      json(
        'DELETE',
        `/api/knowledge-bases/${encodeURIComponent(id)}/documents/${encodeURIComponent(documentId)}`,
        options,
      ),
    search: async (
      query: string,
      knowledgeBaseIds: string[],
      limit?: number,
      options?: CallOptions,
    ): Promise<KnowledgeSearchHit[]> =>
      (
        await json<{ results: KnowledgeSearchHit[] }>('POST', '/api/knowledge-bases/search', {
          ...options,
          body: { query, knowledge_base_ids: knowledgeBaseIds, ...(limit ? { limit } : {}) },
        })
      ).results,
    previewChunks: async (
      request: PreviewChunksRequestInput,
      options?: CallOptions,
    ): Promise<ChunkPreviewItem[]> =>
      (
        await json<{ chunks: ChunkPreviewItem[] }>('POST', '/api/knowledge-base/preview-chunks', {
          ...options,
          body: request,
        })
      ).chunks,
  };
}
