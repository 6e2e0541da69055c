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
