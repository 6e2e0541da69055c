import { z } from 'zod';
import { queryInteger } from './query-integer.js';

/** Most characters of one memory's text. */
export const MAX_MEMORY_CHARS = 2_000;
/** Most tags one save may give; a memory updated by several saves keeps at most twice that. */
export const MAX_MEMORY_TAGS = 10;

/**
 * One long-term memory of a user (docs/memory.md): a fact or preference saved by the agent's
 * `memory_save`, with where it was last written from. Times are ISO 8601.
 */
export const Memory = z.object({
  id: z.string().min(1),
  text: z.string(),
  tags: z.array(z.string()),
  /** The session and run of the save that last wrote the text (null when saved outside one). */
  source_session_id: z.string().nullable(),
  source_run_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Memory = z.infer<typeof Memory>;

/**
 * Query of `GET /api/memories`: the token's user's memories, newest first, a page at a time.
 * `q` keeps the memories that contain every word of it (each as a word prefix, in the text or
 * the tags); blank means no filter. `cursor` is the `next_cursor` of the previous page.
 */
export const ListMemoriesQuery = z.preprocess(
  (value) => {
    if (typeof value !== 'object' || value === null || !('q' in value)) return value;
    const { q, ...rest } = value as { q: unknown };
    return typeof q === 'string' && q.trim() === '' ? rest : value;
  },
  z.object({
    q: z.string().trim().max(500).optional(),
    cursor: z.string().min(1).max(500).optional(),
    /** @default 20 */
    limit: queryInteger(1, 100).default(20),
  }),
);
export type ListMemoriesQuery = z.infer<typeof ListMemoriesQuery>;
export type ListMemoriesQueryInput = z.input<typeof ListMemoriesQuery>;

/** 200 answer of `GET /api/memories`; `next_cursor` is null on the last page. */
export const MemoryList = z.object({
  memories: z.array(Memory),
  next_cursor: z.string().nullable(),
});
export type MemoryList = z.infer<typeof MemoryList>;

/** 200 answer of `DELETE /api/memories`: how many of the caller's memories were deleted. */
export const DeleteMemoriesResponse = z.object({ deleted: z.number().int().nonnegative() });
export type DeleteMemoriesResponse = z.infer<typeof DeleteMemoriesResponse>;

/** Arguments of the `memory_search` agent tool. */
export const MemorySearchArgs = z.object({
  query: z.string().trim().min(1).max(2_000).describe('What to recall: keywords or a question'),
  /** @default 5 */
  limit: z.number().int().min(1).max(20).default(5).describe('Most memories to return'),
});
export type MemorySearchArgs = z.infer<typeof MemorySearchArgs>;

/** Arguments of the `memory_save` agent tool. */
export const MemorySaveArgs = z.object({
  text: z
    .string()
    .trim()
    .min(1)
    .max(MAX_MEMORY_CHARS)
    .describe('One self-contained fact or preference, written so it makes sense on its own later'),
  /** @default [] */
  tags: z
    .array(z.string().trim().min(1).max(50))
    .max(MAX_MEMORY_TAGS)
    .default([])
    .describe('A few short topic words, e.g. "preferences", "family"'),
});
export type MemorySaveArgs = z.infer<typeof MemorySaveArgs>;

/** Arguments of the `memory_delete` agent tool. */
export const MemoryDeleteArgs = z.object({
  id: z.string().trim().min(1).max(200).describe('The id of the memory, as memory_search shows it'),
});
export type MemoryDeleteArgs = z.infer<typeof MemoryDeleteArgs>;
