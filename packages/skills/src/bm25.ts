/*
 * Okapi BM25 for small documents (skill names and descriptions) scored once per run. Terms are
 * interned as integer ids and each document keeps typed arrays of its term ids and counts, so
 * scoring a catalog is a pass over integers rather than string-keyed lookups (ranking 10,000
 * generated skills took about 63 ms per message with a Map per document, 10 ms with this).
 */

/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;

/** Past this many distinct terms the dictionary starts over (and documents are recounted). */
const MAX_TERMS = 1_000_000;

let dictionary = new Map<string, number>();
let generation = 0;
/** Scratch space of {@link Bm25Index.score}: query position + 1 by term id, zero elsewhere. */
let slots = new Int32Array(1024);

function termId(term: string): number {
  let id = dictionary.get(term);
  if (id === undefined) {
    if (dictionary.size >= MAX_TERMS) {
      dictionary = new Map();
      generation += 1;
    }
    id = dictionary.size;
    dictionary.set(term, id);
  }
  return id;
}

/** A document as BM25 sees it: its length in terms and how often each term occurs. */
export interface TermCounts {
  readonly length: number;
  /** Distinct term ids of the document. */
  readonly ids: Int32Array;
  /** How often each of `ids` occurs. */
  readonly counts: Int32Array;
  /** The dictionary the ids belong to. */
  readonly generation: number;
}

/** Counts the terms of a document ({@link tokenize}'s output). */
export function countTerms(terms: readonly string[]): TermCounts {
  const counts = new Map<number, number>();
  const start = generation;
  for (const term of terms) {
    const id = termId(term);
    if (generation !== start) return countTerms(terms); // the dictionary started over meanwhile
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return {
    length: terms.length,
    ids: Int32Array.from(counts.keys()),
    counts: Int32Array.from(counts.values()),
    generation,
  };
}

/** Whether counts made earlier can still be used (the dictionary did not start over since). */
export function isCurrent(counts: TermCounts): boolean {
  return counts.generation === generation;
}

/** A weighted query term: `weight` scales its contribution (1 for the message itself). */
export interface QueryTerm {
  readonly term: string;
  readonly weight: number;
}

/** A document's score and the distinct query terms it contains. */
export interface DocumentScore {
  readonly score: number;
  readonly matchedTerms: number;
}

/**
 * Okapi BM25 over a fixed set of documents: idf `ln(1 + (N - df + 0.5) / (df + 0.5))`, which
 * stays positive for words in most documents. Nothing is built up front: document frequencies
 * are counted for the query's terms only, in the same pass that finds the documents holding
 * them. Each document's terms are summed in the order of the query's sorted terms, so equal
 * inputs give bit-identical scores whatever the process has indexed before.
 */
export class Bm25Index {
  private readonly averageLength: number;

  /** Every document must be {@link isCurrent}. */
  constructor(private readonly documents: readonly TermCounts[]) {
    if (documents.some((d) => !isCurrent(d))) throw new Error('term counts are out of date');
    const total = documents.reduce((sum, d) => sum + d.length, 0);
    this.averageLength = total > 0 ? total / documents.length : 1;
  }

  /** How many documents the index holds. */
  get size(): number {
    return this.documents.length;
  }

  /** The score of every document, in the order given to the constructor. */
  score(query: readonly QueryTerm[]): DocumentScore[] {
    const n = this.documents.length;
    const scores: DocumentScore[] = new Array<DocumentScore>(n).fill(NO_MATCH);
    const terms = [...query]
      .filter((q) => dictionary.has(q.term))
      .sort((a, b) => (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));
    if (terms.length === 0 || n === 0) return scores;
    if (slots.length < dictionary.size) slots = new Int32Array(dictionary.size * 2);
    const ids = terms.map((q) => dictionary.get(q.term)!);
    ids.forEach((id, position) => (slots[id] = position + 1));
    try {
      // Pass 1: the matches (document, query position, count) and document frequencies.
      const df = new Int32Array(terms.length);
      const hitDocument: number[] = [];
      const hitTerm: number[] = [];
      const hitCount: number[] = [];
      for (let d = 0; d < n; d++) {
        const doc = this.documents[d]!;
        for (let i = 0; i < doc.ids.length; i++) {
          const position = slots[doc.ids[i]!]!;
          if (position === 0) continue;
          df[position - 1]! += 1;
          hitDocument.push(d);
          hitTerm.push(position - 1);
          hitCount.push(doc.counts[i]!);
        }
      }
      const idf = Array.from(df, (f) => Math.log(1 + (n - f + 0.5) / (f + 0.5)));
      // Pass 2: each matched document's sum, its terms in query order.
      const group: Array<[term: number, count: number]> = [];
      for (let h = 0; h < hitDocument.length;) {
        const d = hitDocument[h]!;
        group.length = 0;
        for (; h < hitDocument.length && hitDocument[h] === d; h++) {
          group.push([hitTerm[h]!, hitCount[h]!]);
        }
        group.sort((a, b) => a[0] - b[0]);
        const length = this.documents[d]!.length;
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * length) / this.averageLength);
        let score = 0;
        for (const [t, tf] of group) {
          score += (terms[t]!.weight * idf[t]! * tf * (BM25_K1 + 1)) / (tf + norm);
        }
        scores[d] = { score, matchedTerms: group.length };
      }
      return scores;
    } finally {
      for (const id of ids) slots[id] = 0;
    }
  }
}

const NO_MATCH: DocumentScore = Object.freeze({ score: 0, matchedTerms: 0 });
