/**
 * A dense pseudo-random embedding of `dimensions` numbers in [-1, 1), seeded by the text (the
 * same text gives the same vector): shaped like a real model's output, every number a full
 * double, for loading the service with realistic embeddings answers (tests and benchmarks of
 * large ingestions). Carries no meaning: unrelated texts are not more similar than related ones.
 */
export function denseEmbedding(text: string, dimensions = 1536): number[] {
  let seed = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) seed = Math.imul(seed ^ text.charCodeAt(i), 0x01000193);
  // xorshift32; never seeded with 0, which would stay 0.
  let state = seed >>> 0 || 1;
  const vector = new Array<number>(dimensions);
  for (let i = 0; i < dimensions; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    vector[i] = state / 0x80000000 - 1;
  }
  return vector;
}
