import { InvalidCursorError, type MemoryRepository } from '@agent-backend/memory';
import { AppError } from '@agent-backend/http-server';
import { DeleteMemoriesResponse, ListMemoriesQuery, MemoryList } from '@agent-backend/protocol';
import type { ServiceContext } from '@agent-backend/runtime';

/**
 * The caller's long-term memories (docs/memory.md): `GET /api/memories` (newest first,
 * a page at a time, optional `q`), `DELETE /api/memories/:id` (204; another user's id answers
 * 404 exactly like an unknown one) and `DELETE /api/memories` (all of the caller's). The user is
 * the token's `sub`; the repository puts it in every statement.
 */
export function registerMemoryRoutes(
  { app, requireUser, limits }: ServiceContext,
  memories: MemoryRepository,
): void {
  const list = {
    query: ListMemoriesQuery,
    preHandler: requireUser,
    doc: {
      tag: 'memories',
      summary: "List the caller's memories, newest first",
      responses: { 200: { description: 'One page.', json: MemoryList } },
    },
  };
  app.get('/api/memories', list, async (request) => {
    try {
      return (await memories.list(request.userId, request.query)) satisfies MemoryList;
    } catch (error) {
      if (error instanceof InvalidCursorError) {
        throw new AppError('invalid_request', 'invalid request query', [
          { path: 'cursor', message: 'is not a cursor this endpoint returned' },
        ]);
      }
      throw error;
    }
  });

  app.delete(
    '/api/memories/:id',
    {
      preHandler: requireUser,
      limit: limits.rate('writes'),
      doc: {
        tag: 'memories',
        summary: 'Delete one memory',
        parameters: [{ in: 'path', name: 'id', description: 'The memory.' }],
        responses: { 204: { description: 'Deleted.' } },
        errors: ['not_found'],
      },
    },
    async (request, reply) => {
      if (!(await memories.delete(request.userId, request.params.id))) {
        throw new AppError('not_found', `memory ${request.params.id} not found`);
      }
      return reply.status(204).send();
    },
  );

  app.delete(
    '/api/memories',
    {
      preHandler: requireUser,
      limit: limits.rate('writes'),
      doc: {
        tag: 'memories',
        summary: "Delete all of the caller's memories",
        responses: { 200: { description: 'How many were deleted.', json: DeleteMemoriesResponse } },
      },
    },
    async (request) =>
      ({
        deleted: await memories.deleteAll(request.userId),
      }) satisfies DeleteMemoriesResponse,
  );
}
