import { z } from 'zod';

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
