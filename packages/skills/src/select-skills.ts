import type { ActivatedSkill } from '@agent-backend/protocol';
import type { SkillSummary } from './skill.js';
import { Bm25Index, countTerms, isCurrent, type QueryTerm, type TermCounts } from './bm25.js';
import { tokenize } from './text-index.js';

/** Least BM25 score of a matched skill. docs/skills.md explains the choice. */
export const MATCH_MIN_SCORE = 1.5;
/** Least number of distinct words of the conversation a matched skill's name or description has. */
export const MATCH_MIN_TERMS = 2;
/** A skill's name counts this many times in its document: names are chosen to be matched. */
export const NAME_WEIGHT = 2;
/** Earlier user turns count, at this weight, for words the message itself does not have. */
export const RECENT_TURN_WEIGHT = 0.5;
/** How many of the latest earlier turns are read. */
export const RECENT_TURNS_USED = 3;
/** Characters read of the message and of each earlier turn (the start: where requests are). */
export const MAX_QUERY_CHARS = 4000;
/** Distinct words of a query, in order of first appearance; the rest are ignored. */
export const MAX_QUERY_TERMS = 64;

/** What {@link selectSkills} decides from. */
export interface SelectSkillsInput {
  /** Every skill the user may use (shared and their own, shadowing applied). */
  readonly catalog: readonly SkillSummary[];
  /** `skills.skill_names`: non-empty activates exactly these. */
  readonly skillNames: readonly string[];
  /** `skills.auto_match`: with no names, match the conversation against the catalog. */
  readonly autoMatch: boolean;
  /** `skills.max_skills`: most skills active at once. */
  readonly maxSkills: number;
  readonly message: string;
  /** Earlier turns of the conversation (the user's), oldest first. */
  readonly recentTurns?: readonly string[];
}

/** A skill's relevance to a conversation. */
export interface SkillScore {
  readonly name: string;
  readonly score: number;
  /** Distinct words of the conversation found in the skill's name or description. */
  readonly matchedTerms: number;
}

/** The skills a run starts with. */
export interface SkillSelection {
  readonly activated: ActivatedSkill[];
  /** Names asked for that are not in the catalog, in request order. */
  readonly missing: string[];
  /** Names asked for, in the catalog, beyond `maxSkills`: not activated. */
  readonly overLimit: string[];
  /** Every skill with a positive score, best first (empty when nothing was matched). */
  readonly ranking: SkillScore[];
}

/**
 * The query of a conversation: the words of the message at weight 1, and words found only in
 * the latest {@link RECENT_TURNS_USED} earlier turns at {@link RECENT_TURN_WEIGHT}.
 */
export function queryTerms(message: string, recentTurns: readonly string[] = []): QueryTerm[] {
  const weights = new Map<string, number>();
  const add = (text: string, weight: number) => {
    for (const term of tokenize(text.slice(0, MAX_QUERY_CHARS))) {
      if (weights.size >= MAX_QUERY_TERMS && !weights.has(term)) return;
      weights.set(term, Math.max(weights.get(term) ?? 0, weight));
    }
  };
  add(message, 1);
  for (const turn of recentTurns.slice(-RECENT_TURNS_USED).reverse()) add(turn, RECENT_TURN_WEIGHT);
  return [...weights].map(([term, weight]) => ({ term, weight }));
}

/**
 * Skills whose terms are remembered: tokenizing and stemming are most of the cost of matching,
 * and a catalog changes rarely. By object for summaries that are kept (the shared skills), by
 * name and description for the others; past this many, the oldest are forgotten.
 */
const TERMS_CACHE_SIZE = 20_000;
const termsCache = new Map<string, TermCounts>();
const termsByObject = new WeakMap<object, TermCounts>();

/** The terms a skill is found by: its name ({@link NAME_WEIGHT} times) and its description. */
export function skillTerms(skill: Pick<SkillSummary, 'name' | 'description'>): TermCounts {
  const held = termsByObject.get(skill);
  if (held && isCurrent(held)) return held;
  const key = `${skill.name}\u0000${skill.description}`;
  let counted = termsCache.get(key);
  if (!counted || !isCurrent(counted)) {
    const name = tokenize(skill.name);
    const terms: string[] = [];
    for (let i = 0; i < NAME_WEIGHT; i++) terms.push(...name);
    terms.push(...tokenize(skill.description));
    counted = countTerms(terms);
    if (termsCache.size >= TERMS_CACHE_SIZE) {
      termsCache.delete(termsCache.keys().next().value!);
    }
    termsCache.set(key, counted);
  }
  termsByObject.set(skill, counted);
  return counted;
}

const byName = (a: { name: string }, b: { name: string }) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : 0;

/**
 * Scores every skill of `catalog` against the conversation (BM25 over names and descriptions)
 * and returns those with a positive score, best first; equal scores in name order, so the
 * same catalog and conversation always give the same list.
 */
export function rankSkills(
  catalog: readonly SkillSummary[],
  message: string,
  recentTurns: readonly string[] = [],
): SkillScore[] {
  const query = queryTerms(message, recentTurns);
  if (query.length === 0 || catalog.length === 0) return [];
  let documents = catalog.map(skillTerms);
  // Counting a new skill may have restarted the term dictionary: count again, once.
  if (!documents.every(isCurrent)) documents = catalog.map(skillTerms);
  const scores = new Bm25Index(documents).score(query);
  return catalog
    .map((skill, i) => ({ name: skill.name, ...scores[i]! }))
    .filter((s) => s.score > 0)
    .sort((a, b) => b.score - a.score || byName(a, b));
}

/** Whether a ranked skill is relevant enough to activate without being asked for. */
export function isMatch(score: SkillScore): boolean {
  return score.score >= MATCH_MIN_SCORE && score.matchedTerms >= MATCH_MIN_TERMS;
}

/**
 * The skills a run starts with (spec 2.4):
 * - `skillNames` non-empty: exactly those, in request order, duplicates once; names not in the
 *   catalog are `missing` (the run goes on); known names beyond `maxSkills` are `overLimit`
 *   and not activated. No matching happens.
 * - no names and `autoMatch`: the best-ranked skills that pass {@link isMatch}, at most
 *   `maxSkills`, each with its score (rounded to 2 decimals).
 * - otherwise none.
 * Deterministic: equal inputs give equal selections.
 */
export function selectSkills(input: SelectSkillsInput): SkillSelection {
  const names = new Set(input.catalog.map((s) => s.name));
  const max = Math.max(0, Math.floor(input.maxSkills));
  const activated: ActivatedSkill[] = [];
  const missing: string[] = [];
  const overLimit: string[] = [];
  const ranking = rankSkills(input.catalog, input.message, input.recentTurns);
  if (input.skillNames.length > 0) {
    for (const name of new Set(input.skillNames)) {
      if (!names.has(name)) missing.push(name);
      else if (activated.length < max) activated.push({ name, reason: 'explicit' });
      else overLimit.push(name);
    }
  } else if (input.autoMatch) {
    for (const score of ranking) {
      if (activated.length >= max) break;
      if (!isMatch(score)) continue;
      activated.push({
        name: score.name,
        reason: 'matched',
        score: Math.round(score.score * 100) / 100,
      });
    }
  }
  return { activated, missing, overLimit, ranking };
}
