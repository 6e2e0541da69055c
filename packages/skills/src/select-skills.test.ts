import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MATCH_MIN_SCORE,
  queryTerms,
  rankSkills,
  selectSkills,
  type SelectSkillsInput,
} from './select-skills.js';
import type { SkillSummary } from './skill.js';
import { tokenize } from './text-index.js';

const skill = (name: string, description: string): SkillSummary => ({
  name,
  description,
  source: 'builtin',
});

const CATALOG: SkillSummary[] = [
  skill(
    'drafting-emails',
    'Drafts or rewrites an email with a clear subject line and a concrete ask. Use when the ' +
      'user wants to write, answer or polish an email to someone.',
  ),
  skill(
    'summarizing-documents',
    'Summarizes a document, report, article or transcript into key points and action items. ' +
      'Use when the user asks to summarize, condense or give a TL;DR of a text.',
  ),
  skill(
    'writing-plans',
    'Turns a goal into an ordered plan with steps, milestones and risks. Use when the user ' +
      'asks for a plan, roadmap or schedule.',
  ),
  skill(
    'reviewing-code',
    'Reviews a code change or pull request for bugs, security problems and missing tests.',
  ),
  skill('expense-reports', 'Fills in monthly expense reports from receipts and card statements.'),
];

const select = (message: string, rest: Partial<SelectSkillsInput> = {}) =>
  selectSkills({
    catalog: CATALOG,
    skillNames: [],
    autoMatch: true,
    maxSkills: 3,
    message,
    ...rest,
  });

describe('tokenize', () => {
  it('lower-cases, splits names, drops stop words and stems', () => {
    expect(tokenize('Drafting the E-mails for my Reviews!')).toEqual(['draft', 'mail', 'review']);
    expect(tokenize('draft-email')).toEqual(['draft', 'email']);
  });

  it('folds British spellings onto American ones', () => {
    expect(tokenize('summarise summarising')).toEqual(tokenize('summarize summarizing'));
  });

  it('indexes CJK text as character pairs', () => {
    expect(tokenize('写一封邮件 email')).toEqual(['写一', '一封', '封邮', '邮件', 'email']);
  });
});

describe('selectSkills with skill_names', () => {
  it('activates exactly the named skills, in request order, and reports unknown names', () => {
    const selection = select('summarize this report', {
      skillNames: ['writing-plans', 'nope', 'drafting-emails', 'writing-plans'],
    });
    expect(selection.activated).toEqual([
      { name: 'writing-plans', reason: 'explicit' },
      { name: 'drafting-emails', reason: 'explicit' },
    ]);
    expect(selection.missing).toEqual(['nope']);
    expect(selection.overLimit).toEqual([]);
  });

  it('activates at most max_skills and reports the names beyond it', () => {
    const selection = select('', {
      skillNames: ['writing-plans', 'missing-one', 'reviewing-code', 'expense-reports'],
      maxSkills: 2,
    });
    expect(selection.activated.map((a) => a.name)).toEqual(['writing-plans', 'reviewing-code']);
    expect(selection.missing).toEqual(['missing-one']);
    expect(selection.overLimit).toEqual(['expense-reports']);
  });

  it('does not match when names are given, even with auto_match', () => {
    const selection = select('Draft an email to my landlord', { skillNames: ['nope'] });
    expect(selection.activated).toEqual([]);
    expect(selection.missing).toEqual(['nope']);
  });
});

describe('selectSkills by matching', () => {
  it.each([
    ['Can you draft an email to my landlord about the heating?', 'drafting-emails'],
    ['Please summarise this report in five bullet points', 'summarizing-documents'],
    ['I need a plan with milestones for moving house', 'writing-plans'],
    ['Review my pull request for security bugs', 'reviewing-code'],
  ])('%s → %s', (message, name) => {
    const { activated } = select(message);
    expect(activated).toEqual([{ name, reason: 'matched', score: expect.any(Number) }]);
    expect(activated[0]!.score).toBeGreaterThanOrEqual(MATCH_MIN_SCORE);
  });

  it('activates nothing for a message no skill is about', () => {
    expect(select('What is the weather in Paris tomorrow?').activated).toEqual([]);
  });

  it('needs two words in common: one shared word is not enough', () => {
    // "plan" alone, however rare, does not make a match...
    expect(rankSkills(CATALOG, 'plan')[0]).toMatchObject({ name: 'writing-plans' });
    expect(select('plan').activated).toEqual([]);
    // ...and "write a poem" shares only "write" with the email skill.
    expect(select('write a poem about the sea').activated).toEqual([]);
  });

  it('is off without auto_match', () => {
    expect(select('Draft an email to my landlord', { autoMatch: false }).activated).toEqual([]);
  });

  it('keeps at most max_skills, best first', () => {
    const message =
      'Summarize the report, draft an email about it, plan the milestones and review the code ' +
      'change for bugs';
    const three = select(message).activated;
    expect(three).toHaveLength(3);
    const one = select(message, { maxSkills: 1 }).activated;
    expect(one).toEqual([three[0]]);
    expect(three.map((a) => a.score)).toEqual(
      [...three.map((a) => a.score)].sort((a, b) => b! - a!),
    );
  });

  it('reads recent turns at a lower weight', () => {
    const turns = ['I got a reply from my landlord by email.', 'He refuses to fix the heating.'];
    const withTurns = select('Help me write back to him', { recentTurns: turns }).activated;
    expect(withTurns.map((a) => a.name)).toEqual(['drafting-emails']);
    expect(select('Help me write back to him').activated).toEqual([]);
    const weights = new Map(
      queryTerms('email me', ['email', 'landlord']).map((t) => [t.term, t.weight]),
    );
    expect(weights).toEqual(
      new Map([
        ['email', 1],
        ['landlord', 0.5],
      ]),
    );
  });

  it('orders equal scores by name', () => {
    const twins = [
      skill('b-twin', 'Books train tickets.'),
      skill('a-twin', 'Books train tickets.'),
    ];
    const ranked = rankSkills(twins, 'book train tickets');
    expect(ranked.map((r) => r.name)).toEqual(['a-twin', 'b-twin']);
    expect(ranked[0]!.score).toBe(ranked[1]!.score);
  });

  it('gives the same selection for the same input, whatever the catalog order', () => {
    const words = ['email', 'plan', 'report', 'code', 'review', 'draft', 'budget', 'travel'];
    const arbitrarySkill = fc.record({
      name: fc.stringMatching(/^[a-z]{1,8}(-[a-z]{1,8})?$/),
      description: fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 12 }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(arbitrarySkill, { selector: (s) => s.name, minLength: 1, maxLength: 30 }),
        fc.array(fc.constantFrom(...words), { maxLength: 8 }),
        fc.integer({ min: 1, max: 5 }),
        fc.integer(),
        (skills, message, maxSkills, seed) => {
          const catalog = skills.map((s) => skill(s.name, s.description.join(' ')));
          const shuffled = [...catalog].sort(
            (a, b) => hash(a.name, seed) - hash(b.name, seed) || (a.name < b.name ? -1 : 1),
          );
          const input = { skillNames: [], autoMatch: true, maxSkills, message: message.join(' ') };
          const first = selectSkills({ ...input, catalog });
          expect(selectSkills({ ...input, catalog: shuffled })).toEqual(first);
          expect(first.activated.length).toBeLessThanOrEqual(maxSkills);
        },
      ),
      { numRuns: 200 },
    );
  });
});

/** A deterministic shuffle key. */
function hash(text: string, seed: number): number {
  let h = seed | 0;
  for (const c of text) h = Math.imul(h ^ c.charCodeAt(0), 2654435761);
  return h;
}
