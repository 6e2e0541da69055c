/**
 * A deterministic bag-of-words embedding: each lower-cased run of letters or digits is hashed
 * (32-bit FNV-1a of its UTF-8 bytes) into one of `dimensions` buckets, which count the words.
 * Not normalized. Texts sharing words get similar vectors; a text without words gets zeros.
 */
export function hashingEmbedding(text: string, dimensions = 64): number[] {
  if (!Number.isInteger(dimensions) || dimensions < 1) {
    throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
  }
  const vector = new Array<number>(dimensions).fill(0);
  for (const word of words(text)) vector[fnv1a(word) % dimensions]! += 1;
  return vector;
}

/** The lower-cased runs of letters and digits in `text`. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** 32-bit FNV-1a hash of the UTF-8 bytes of `text`, as an unsigned integer. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash >>> 0;
}
