/** How {@link splitText} cuts a text; the defaults are those of spec 4.7. */
export interface SplitOptions {
  /** Maximum characters (code points) per chunk; no chunk is ever longer. @default 1000 */
  chunkSize?: number;
  /**
   * Most characters a chunk may repeat from the end of the chunk before it. Must be smaller
   * than `chunkSize`, or the split could never move forward. @default 200
   */
  chunkOverlap?: number;
  /** The preferred boundary between pieces of the text. @default '\n\n' */
  delimiter?: string;
  /**
   * Stop with {@link ChunkLimitError} once more chunks than this would be produced, before the
   * work is done (a preview must not answer with millions of chunks). @default Infinity
   */
  maxChunks?: number;
  /**
   * Stop with {@link ChunkLimitError} once the chunks together would hold more characters than
   * this (overlap repeats text, so the output can be far larger than the input). @default Infinity
   */
  maxTotalLength?: number;
}

/** {@link SplitOptions} with every default applied and checked. */
export interface ResolvedSplitOptions {
  readonly chunkSize: number;
  readonly chunkOverlap: number;
  readonly delimiter: string;
  readonly maxChunks: number;
  readonly maxTotalLength: number;
}

export const DEFAULT_CHUNK_SIZE = 1000;
export const DEFAULT_CHUNK_OVERLAP = 200;
export const DEFAULT_DELIMITER = '\n\n';

/** Options that cannot describe a split; the message names the option. */
export class InvalidSplitOptionsError extends RangeError {
  readonly code = 'invalid_split_options';
  constructor(message: string) {
    super(message);
    this.name = 'InvalidSplitOptionsError';
  }
}

/** The split would exceed `maxChunks` or `maxTotalLength`; nothing is returned. */
export class ChunkLimitError extends Error {
  readonly code = 'chunk_limit_exceeded';
  constructor(
    readonly limit: 'maxChunks' | 'maxTotalLength',
    readonly max: number,
  ) {
    super(
      limit === 'maxChunks'
        ? `the text would be split into more than ${max} chunks`
        : `the chunks would hold more than ${max} characters in total`,
    );
    this.name = 'ChunkLimitError';
  }
}

/** Applies the defaults and rejects options no split can honour. */
export function resolveSplitOptions(options: SplitOptions = {}): ResolvedSplitOptions {
  const {
    chunkSize = DEFAULT_CHUNK_SIZE,
    chunkOverlap = DEFAULT_CHUNK_OVERLAP,
    delimiter = DEFAULT_DELIMITER,
    maxChunks = Infinity,
    maxTotalLength = Infinity,
  } = options;
  if (!Number.isSafeInteger(chunkSize) || chunkSize < 1) {
    throw new InvalidSplitOptionsError('chunkSize must be a positive integer');
  }
  if (!Number.isSafeInteger(chunkOverlap) || chunkOverlap < 0) {
    throw new InvalidSplitOptionsError('chunkOverlap must be a non-negative integer');
  }
  if (chunkOverlap >= chunkSize) {
    throw new InvalidSplitOptionsError('chunkOverlap must be smaller than chunkSize');
  }
  if (delimiter.length === 0) throw new InvalidSplitOptionsError('delimiter must not be empty');
  if (!(maxChunks >= 0) || !(maxTotalLength >= 0)) {
    throw new InvalidSplitOptionsError('maxChunks and maxTotalLength must not be negative');
  }
  return { chunkSize, chunkOverlap, delimiter, maxChunks, maxTotalLength };
}
