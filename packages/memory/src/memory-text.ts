import { createHash } from 'node:crypto';
import { MAX_MEMORY_CHARS, MAX_MEMORY_TAGS } from '@agent-backend/protocol';

/**
 * A memory's text reduced to what makes two texts "the same": Unicode compatibility forms
 * folded (NFKC), lower case, every run of characters that are not letters or digits one space,
 * no space at the ends. "Prefers tea." and "prefers  TEA" are the same memory.
 */
export function normalizeMemoryText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .trim();
}

/** Hex SHA-256 of the normalized text: one row per user and key (a unique index). */
export function memoryKey(text: string): string {
  return createHash('sha256').update(normalizeMemoryText(text)).digest('hex');
}

/** The distinct words of a text, as {@link normalizeMemoryText} spells them. */
export function memoryWords(text: string): Set<string> {
  const normalized = normalizeMemoryText(text);
  return new Set(normalized ? normalized.split(' ') : []);
}

/** Shared words over all words of the two (Jaccard); 0 when both have none. */
export function wordSimilarity(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  let shared = 0;
  for (const word of a) if (b.has(word)) shared++;
  const all = a.size + b.size - shared;
  return all === 0 ? 0 : shared / all;
}

/** Most tags a stored memory keeps when saves merge theirs: the newest first. */
export const MAX_STORED_TAGS = 2 * MAX_MEMORY_TAGS;

/** Tags trimmed, lower-cased, empty ones and repeats dropped, in order. */
export function cleanTags(tags: readonly string[]): string[] {
  return [...new Set(tags.map((t) => t.trim().toLowerCase()).filter(Boolean))];
}

/** Raised for a text or tags the store will not keep (the tool's schema checks the same). */
export class InvalidMemoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidMemoryError';
  }
}

/** The text trimmed; refuses an empty one or one over {@link MAX_MEMORY_CHARS}. */
export function checkMemoryText(text: string): string {
  const trimmed = text.trim();
  if (!normalizeMemoryText(trimmed)) {
    throw new InvalidMemoryError('a memory needs at least one letter or digit');
  }
  if (trimmed.length > MAX_MEMORY_CHARS) {
    throw new InvalidMemoryError(`a memory has at most ${MAX_MEMORY_CHARS} characters`);
  }
  return trimmed;
}
