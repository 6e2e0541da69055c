import { describe, expect, it } from 'vitest';
import { SKILL_PROMPT_LIMITS, skillsPromptSection } from './prompt-section.js';
import type { Skill, SkillSummary } from './skill.js';

const active = (name: string, body: string, resources: Skill['resources'] = []): Skill => ({
  name,
  description: `About ${name}.`,
  source: 'builtin',
  frontMatter: { name, description: `About ${name}.` },
  body,
  resources,
});
const summary = (name: string, description = `About ${name}.`): SkillSummary => ({
  name,
  description,
  source: 'operator',
});

describe('skillsPromptSection', () => {
  it('is empty when no skill is active and none may be loaded', () => {
    expect(skillsPromptSection({ active: [], others: [summary('a')], canLoad: 0 })).toEqual({
      text: '',
      truncated: [],
    });
    expect(skillsPromptSection({ active: [], others: [], canLoad: 3 }).text).toBe('');
  });

  it("shows active skills' instructions and files, then the others to load", () => {
    const { text, truncated } = skillsPromptSection({
      active: [active('plans', 'Step 1.\nStep 2.', [{ path: 'templates/t.md', size: 12 }])],
      others: [summary('emails'), summary('review')],
      canLoad: 2,
    });
    expect(truncated).toEqual([]);
    expect(text).toBe(
      [
        '# Skills',
        'Skills are instructions for particular kinds of tasks. When the task matches an active ' +
          "skill, follow that skill's instructions.",
        '',
        '## Active skill: plans',
        'About plans.',
        '',
        'Step 1.',
        'Step 2.',
        '',
        'Files of this skill (read one with load_skill {"name": "plans", "file": "<path>"}):',
        '- templates/t.md (12 bytes)',
        '',
        '## Other skills',
        "Call load_skill with a skill's name when the task matches its description (up to 2 " +
          'more in this run):',
        '- emails: About emails.',
        '- review: About review.',
      ].join('\n'),
    );
  });

  it('cuts long instructions and says how to read the rest', () => {
    const long = 'x'.repeat(SKILL_PROMPT_LIMITS.bodyChars + 10);
    const { text, truncated } = skillsPromptSection({
      active: [active('long', long), active('short', 'Short.')],
      others: [],
      canLoad: 0,
    });
    expect(truncated).toEqual(['long']);
    expect(text).toContain(
      '[The instructions are cut here for length: call load_skill with {"name": "long"} to read all of them.]',
    );
    expect(text).toContain('Short.');
    expect(text).not.toContain('x'.repeat(SKILL_PROMPT_LIMITS.bodyChars + 1));
  });

  it('stays within its bounds whatever the catalog holds', () => {
    const body = 'y'.repeat(SKILL_PROMPT_LIMITS.bodyChars);
    const many = Array.from({ length: 1000 }, (_, i) => summary(`skill-${i}`, 'd'.repeat(1024)));
    const { text, truncated } = skillsPromptSection({
      active: [active('a', body), active('b', body), active('c', body), active('d', body)],
      others: many,
      canLoad: 1,
    });
    expect(truncated).toEqual(['c', 'd']);
    expect(text.length).toBeLessThan(
      SKILL_PROMPT_LIMITS.activeChars + SKILL_PROMPT_LIMITS.listChars + 2_000,
    );
    expect(text).toContain(`- skill-0: ${'d'.repeat(SKILL_PROMPT_LIMITS.descriptionChars - 3)}...`);
    expect(text).toMatch(/- \.\.\. and \d+ more, less relevant to this conversation$/);
  });
});
