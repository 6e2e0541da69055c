import { hashingEmbedding } from './hashing-embedding.js';

/**
 * Words that mean the same thing, for {@link conceptEmbedding}: it embeds concepts, so a query
 * and a passage sharing no word but a meaning come out similar, as with a real model.
 */
export const TEST_SYNONYMS: Readonly<Record<string, string>> = {
  car: 'vehicle',
  cars: 'vehicle',
  automobile: 'vehicle',
  automobiles: 'vehicle',
  serviced: 'maintenance',
  servicing: 'maintenance',
  maintenance: 'maintenance',
  upkeep: 'maintenance',
  refund: 'money-back',
  refunds: 'money-back',
  reimbursement: 'money-back',
};

/**
 * A test embedding model for the scripted embeddings endpoint (`startScriptedModel({ embed })`):
 * the text's words mapped to their concept ({@link TEST_SYNONYMS}), hashed into 128 numbers.
 */
export function conceptEmbedding(text: string): number[] {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return hashingEmbedding(words.map((w) => TEST_SYNONYMS[w] ?? w).join(' '), 128);
}
