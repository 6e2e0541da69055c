import { ChunkLimitError, splitText } from '@agent-backend/chunking';
import { AppError, parseInput } from '@agent-backend/http-server';
import { PreviewChunksRequest, type PreviewChunksResponse } from '@agent-backend/protocol';
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
export function registerKnowledgeRoutes({
  app,
  requireUser,
}: Pick<ServiceContext, 'app' | 'requireUser'>): void {
  app.post(
    '/api/knowledge-base/preview-chunks',
    { onRequest: requireUser, bodyLimit: PREVIEW_BODY_LIMIT },
    async (request) => {
      const body = parseInput(PreviewChunksRequest, request.body);
      let chunks;
      try {
        chunks = splitText(body.content, {
          chunkSize: body.chunk_size,
          chunkOverlap: body.chunk_overlap,
          delimiter: body.delimiter,
          maxChunks: MAX_PREVIEW_CHUNKS,
          maxTotalLength: MAX_PREVIEW_CHARACTERS,
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
