import type { Capability } from '@agent-backend/agent-runtime';
import type { Logger } from '@agent-backend/logger';
import type { Database } from '@agent-backend/store';
import { MemoryRepository, type MemoryRepositoryOptions } from './memory-repository.js';
import { memoryTools } from './memory-tools.js';
import { memoryPromptSection } from './prompt-section.js';

export interface MemoryDeps {
  readonly db: Database;
  /** The service's one embeddings client; absent: memory search is full text only. */
  readonly embedder?: MemoryRepositoryOptions['embedder'];
  readonly logger: Logger;
}

export interface MemoryCapability extends Capability {
  /** Users' long-term memories (shared with the `/api/memories` endpoints). */
  readonly memories: MemoryRepository;
}

/**
 * Long-term memory for runs with `enable_memory` (docs/memory.md): the three tools, and the
 * memories most relevant to the message in the system prompt.
 */
export function memoryCapability(deps: MemoryDeps): MemoryCapability {
  const memories = new MemoryRepository(deps.db, {
    ...(deps.embedder ? { embedder: deps.embedder } : {}),
    onEmbeddingError: (error) =>
      deps.logger.warn(
        { err: error },
        'memory embedding failed; memory search used full text only',
      ),
  });
  return {
    memories,
    source: async (run) => {
      if (!run.request.capabilities.memory) return [];
      const { userId, sessionId, runId } = run;
      const section = await memoryPromptSection(
        memories,
        userId,
        run.request.message,
        undefined,
        run.signal,
      );
      return {
        tools: memoryTools(memories, { userId, sessionId, runId }),
        promptSections: section ? [section] : [],
      };
    },
  };
}
