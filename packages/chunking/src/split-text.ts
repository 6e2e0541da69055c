import { PairIndex } from './code-points.js';
import { resolveSplitOptions, type SplitOptions } from './options.js';
import { packUnits, type Chunk } from './pack.js';
import { collectUnits } from './units.js';

/**
 * Splits a text into chunks of at most `chunkSize` characters (Unicode code points), for chunk
 * preview and knowledge-base ingestion alike, so a preview shows exactly what ingestion stores.
 *
 * - The text is cut at `delimiter`; a piece longer than `chunkSize` is cut again at line breaks,
 *   then sentence ends, then whitespace, and a stretch with none of these between characters
 *   (never inside a surrogate pair). Pieces are trimmed of whitespace; empty pieces are dropped.
 * - Consecutive pieces are packed into one chunk while it stays within `chunkSize`; a chunk is
 *   the original text from its first piece to its last, separators between them included.
 * - Each chunk after the first repeats the longest tail of whole pieces of the previous chunk
 *   that has at most `chunkOverlap` characters and leaves room for the next piece.
 *
 * Empty or whitespace-only text gives no chunks. Runs in time linear in the text plus the
 * chunks produced. Throws `InvalidSplitOptionsError` for impossible options and
 * `ChunkLimitError` when `maxChunks` or `maxTotalLength` would be exceeded.
 */
export function splitText(text: string, options?: SplitOptions): Chunk[] {
  const resolved = resolveSplitOptions(options);
  const pairs = new PairIndex(text);
  return packUnits(text, collectUnits(text, resolved, pairs), resolved, pairs.any);
}
