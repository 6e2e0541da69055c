import { defineTool, type AgentTool } from '@agent-backend/agent-runtime';
import { MemoryDeleteArgs, MemorySaveArgs, MemorySearchArgs } from '@agent-backend/protocol';
import type { MemoryRepository, SaveOutcome } from './memory-repository.js';
import type { MemoryHit } from './memory-search.js';
import { InvalidMemoryError } from './memory-text.js';

export const MEMORY_SEARCH_TOOL = 'memory_search';
export const MEMORY_SAVE_TOOL = 'memory_save';
export const MEMORY_DELETE_TOOL = 'memory_delete';

/** Whose memories the tools of one run use, and where their saves come from. */
export interface MemoryToolsScope {
  /** The token's user: the tools read and write only this user's memories. */
  readonly userId: string;
  readonly sessionId: string;
  readonly runId: string;
}

/** A hit as the model reads it: no timestamps of creation, rounded score. */
const forModel = (hit: MemoryHit) => ({
  id: hit.id,
  text: hit.text,
  tags: hit.tags,
  updated_at: hit.updated_at,
  score: Number(hit.score.toPrecision(4)),
});

/**
 * The memory tools of one run, bound to `scope.userId` (never to anything the model or the
 * request says): `memory_search` reads, so it is offered in every mode; `memory_save` and
 * `memory_delete` write, so the runtime refuses them in `ask` and `plan` modes and they pass
 * through human approval like every write tool.
 */
export function memoryTools(repository: MemoryRepository, scope: MemoryToolsScope): AgentTool[] {
  const { userId } = scope;
  return [
    defineTool({
      name: MEMORY_SEARCH_TOOL,
      description:
        'Searches what you remember about the user from earlier conversations (facts, ' +
        'preferences, ongoing projects) and returns the most relevant memories with their ids. ' +
        'Use it when the answer may depend on something the user told you before.',
      schema: MemorySearchArgs,
      writes: false,
      repeatSafe: true,
      async run(args, context) {
        const hits = await repository.search(userId, args.query, {
          limit: args.limit,
          signal: context.signal,
        });
        if (hits.length === 0) return { content: 'No matching memories found.' };
        return { content: JSON.stringify({ results: hits.map(forModel) }) };
      },
    }),
    defineTool({
      name: MEMORY_SAVE_TOOL,
      description:
        'Remembers one lasting fact or preference about the user for future conversations ' +
        '(not things only relevant to this task). Write it so it makes sense on its own. ' +
        'Saving nearly the same text as an existing memory updates that memory.',
      schema: MemorySaveArgs,
      writes: true,
      async run(args, context) {
        let outcome: SaveOutcome;
        try {
          outcome = await repository.save(
            userId,
            { text: args.text, tags: args.tags, sessionId: scope.sessionId, runId: scope.runId },
            context.signal,
          );
        } catch (error) {
          if (!(error instanceof InvalidMemoryError)) throw error;
          return { content: `Not saved: ${error.message}.`, isError: true };
        }
        const { memory } = outcome;
        if (outcome.status === 'created') return { content: `Saved as memory ${memory.id}.` };
        return {
          content:
            `Updated memory ${memory.id}, which said: ${JSON.stringify(outcome.previousText)}; ` +
            `it now says: ${JSON.stringify(memory.text)}.`,
        };
      },
    }),
    defineTool({
      name: MEMORY_DELETE_TOOL,
      description:
        'Forgets one memory of the user, by the id memory_search gave. Use it when the user ' +
        'asks you to forget something or a memory is wrong.',
      schema: MemoryDeleteArgs,
      writes: true,
      async run(args) {
        if (await repository.delete(userId, args.id)) {
          return { content: `Deleted memory ${args.id}.` };
        }
        return { content: `No memory with id ${args.id}.`, isError: true };
      },
    }),
  ];
}
