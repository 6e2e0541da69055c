import { stemmer } from 'stemmer';

/**
 * English words too common to tell skills apart. Short on purpose: a word missing here costs
 * little, since BM25 gives words that many descriptions share a low weight anyway.
 */
const STOP_WORDS = new Set(
  (
    'a an and are as at be been but by can could do does for from had has have he her his how i ' +
    'if in into is it its me my no not of on or our please she so than that the their them then ' +
    'there these they this those to up us use used using want was we were what when where which ' +
    'while who why will with would you your'
  ).split(' '),
);

/** Han, kana and Hangul: no spaces between words, so they are indexed as character pairs. */
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
const CJK_RUNS = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+)/u;
const WORDS = /[\p{L}\p{N}]+/gu;

/** British spellings fold to American ones before stemming: "summarise" meets "summarize". */
function foldSpelling(word: string): string {
  return word.length > 5 ? word.replace(/is(e|es|ed|ing|ation|ations)$/, 'iz$1') : word;
}

/**
 * Terms of a text, in order, repeats kept: lower-cased (NFKC), split on anything that is not
 * a letter or digit (so `draft-email` gives `draft`, `email`), stop words and one-letter words
 * dropped, Porter-stemmed (`drafting` → `draft`); runs of CJK characters give overlapping pairs.
 */
export function tokenize(text: string): string[] {
  const terms: string[] = [];
  for (const match of text.normalize('NFKC').toLowerCase().matchAll(WORDS)) {
    const word = match[0];
    if (!CJK.test(word)) {
      if (word.length > 1 && !STOP_WORDS.has(word)) terms.push(stemmer(foldSpelling(word)));
      continue;
    }
    for (const part of word.split(CJK_RUNS)) {
      if (!part) continue;
      if (!CJK.test(part)) {
        if (part.length > 1 && !STOP_WORDS.has(part)) terms.push(stemmer(foldSpelling(part)));
      } else if (part.length === 1) {
        terms.push(part);
      } else {
        for (let i = 0; i + 1 < part.length; i++) terms.push(part.slice(i, i + 2));
      }
    }
  }
  return terms;
}

/** BM25 term-frequency saturation. */
export const BM25_K1 = 1.2;
/** BM25 length normalisation. */
export const BM25_B = 0.75;

/** A document as BM25 sees it: its length in terms and how often each term occurs. */
export interface TermCounts {
  readonly length: number;
  readonly counts: ReadonlyMap<string, number>;
}

/** Counts the terms of a document ({@link tokenize}'s output). */
export function countTerms(terms: readonly string[]): TermCounts {
  const counts = new Map<string, number>();
  for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
  return { length: terms.length, counts };
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
 * are counted for the query's terms only, which suits a catalog scored once per run from
 * cached {@link TermCounts}. Terms are summed in a fixed (sorted) order, so equal inputs give
 * bit-identical scores.
 */
export class Bm25Index {
  private readonly averageLength: number;

  constructor(private readonly documents: readonly TermCounts[]) {
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
    const scores = this.documents.map(() => ({ score: 0, matchedTerms: 0 }));
    const ordered = [...query].sort((a, b) => (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));
    for (const { term, weight } of ordered) {
      let df = 0;
      for (const doc of this.documents) if (doc.counts.has(term)) df++;
      if (df === 0) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      this.documents.forEach((doc, i) => {
        const tf = doc.counts.get(term);
        if (!tf) return;
        const norm = BM25_K1 * (1 - BM25_B + (BM25_B * doc.length) / this.averageLength);
        const entry = scores[i]!;
        entry.score += (weight * idf * tf * (BM25_K1 + 1)) / (tf + norm);
        entry.matchedTerms += 1;
      });
    }
    return scores;
  }
}
