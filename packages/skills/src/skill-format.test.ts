import { describe, expect, it } from 'vitest';
import { SKILL_LIMITS } from './limits.js';
import { describeProblems, type SkillProblem, type SkillResult } from './skill.js';
import { parseSkillMarkdown } from './skill-format.js';

const VALID = `---
name: drafting-emails
description: Drafts an email with a clear subject and a concrete ask.
license: MIT
compatibility: Needs nothing but text.
metadata:
  author: someone
  version: 1.0
  reviewed: true
allowed-tools: web_search
x-vendor-extension: ignored
---

# Drafting emails

Write the subject first.
`;

function problemsOf<T>(result: SkillResult<T>): readonly SkillProblem[] {
  if (result.ok) throw new Error('expected the skill to be invalid');
  return result.problems;
}

/** A SKILL.md with these front-matter lines and a body. */
const md = (frontMatter: string, body = 'Do the thing.') => `---\n${frontMatter}\n---\n${body}\n`;

describe('parseSkillMarkdown', () => {
  it('reads the front matter and the instructions of a valid SKILL.md', () => {
    const result = parseSkillMarkdown(VALID, 'drafting-emails');
    expect(result).toEqual({
      ok: true,
      value: {
        frontMatter: {
          name: 'drafting-emails',
          description: 'Drafts an email with a clear subject and a concrete ask.',
          license: 'MIT',
          compatibility: 'Needs nothing but text.',
          metadata: { author: 'someone', version: '1', reviewed: 'true' },
          'allowed-tools': 'web_search',
        },
        body: '# Drafting emails\n\nWrite the subject first.',
      },
    });
  });

  it('accepts a byte-order mark and Windows line ends', () => {
    const result = parseSkillMarkdown(`\uFEFF${VALID.replaceAll('\n', '\r\n')}`);
    expect(result.ok && result.value.body).toBe('# Drafting emails\n\nWrite the subject first.');
  });

  it('refuses a file without front matter, or with an unclosed one', () => {
    expect(problemsOf(parseSkillMarkdown('# Just markdown\n'))).toEqual([
      {
        path: 'SKILL.md',
        message: 'must start with a YAML front matter block: a line "---" first',
      },
    ]);
    expect(problemsOf(parseSkillMarkdown('---\nname: x\ndescription: y\n'))).toEqual([
      { path: 'SKILL.md', message: 'the front matter has no closing "---" line' },
    ]);
  });

  it('reports YAML syntax errors with their line in the file', () => {
    const problems = problemsOf(parseSkillMarkdown(md('name: a\ndescription: [unclosed')));
    expect(problems[0]!.path).toBe('SKILL.md');
    expect(problems[0]!.message).toMatch(/^front matter line 3: /);
  });

  it('refuses duplicate keys and front matter that is not a mapping', () => {
    expect(problemsOf(parseSkillMarkdown(md('name: a\nname: b\ndescription: d')))).toEqual([
      { path: 'SKILL.md', message: expect.stringMatching(/^front matter line 3: .*unique/i) },
    ]);
    expect(problemsOf(parseSkillMarkdown(md('- a\n- b')))).toEqual([
      {
        path: 'SKILL.md',
        message: 'the front matter must be a YAML mapping (name: ..., description: ...)',
      },
    ]);
  });

  it('does not expand alias bombs', () => {
    const bomb = [
      'a: &a ["x","x","x","x","x","x","x","x","x"]',
      'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]',
      'c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]',
      'd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]',
      'name: bomb',
      'description: d',
    ].join('\n');
    expect(problemsOf(parseSkillMarkdown(md(bomb)))[0]!.message).toMatch(/alias/i);
  });

  describe('bounds the front matter before parsing it', () => {
    // The yaml package parses on the event loop, recursively, at a few microseconds a token: a
    // 64 KB SKILL.md of nested YAML held the loop for half a second and overflowed its stack.
    const refusal = (message: string) => [{ path: 'SKILL.md', message }];
    const head = 'name: a\ndescription: d\n';

    it('refuses a 64 KB SKILL.md of deeply nested YAML for its front matter size', () => {
      const depth = (SKILL_LIMITS.skillMdBytes - 100) / 2;
      const text = md(`${head}x-vendor: ${'['.repeat(depth)}${']'.repeat(depth)}`);
      expect(problemsOf(parseSkillMarkdown(text))).toEqual(
        refusal(`the front matter is larger than ${SKILL_LIMITS.frontMatterBytes} bytes`),
      );
    });

    const nested = (levels: number) => Array.from({ length: levels }, (_, i) => i);
    it.each([
      ['flow sequences', `x-vendor: ${'['.repeat(40)}${']'.repeat(40)}`],
      ['flow mappings', `x-vendor: ${'{a: '.repeat(40)}1${'}'.repeat(40)}`],
      [
        'indented mappings',
        nested(40)
          .map((i) => `${' '.repeat(i)}k${i}:`)
          .join('\n') + ' 1',
      ],
      ['compact sequences', `x-vendor:\n  ${'- '.repeat(40)}x`],
      [
        'indented sequences',
        nested(40)
          .map((i) => `${' '.repeat(i)}-`)
          .join('\n') + ' x',
      ],
      ['quoted keys in flow', `x-vendor: ${'{"a": '.repeat(40)}1${'}'.repeat(40)}`],
    ])('refuses front matter nested deeper than the bound: %s', (_label, yaml) => {
      expect(problemsOf(parseSkillMarkdown(md(`${head}${yaml}`)))).toEqual(
        refusal(`the front matter nests deeper than ${SKILL_LIMITS.frontMatterDepth} levels`),
      );
    });

    it('counts brackets in quoted text, comments and block scalars as text', () => {
      const text = md(
        [
          `name: a`,
          `description: "[[[[[[[[[[[[[[[[[[[[ {{{{{{{{{{{{{{{{{{{{"`,
          `license: '[[[[[[[[[[[[[[[[[[[[[['`,
          `# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
          `compatibility: |`,
          `  [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
          `x-hooks:`,
          `  pre:`,
          `    - match: {tool: [a, b], when: {always: true}}`,
        ].join('\n'),
      );
      expect(parseSkillMarkdown(text).ok).toBe(true);
    });

    it('refuses front matter with more YAML tokens than the bound', () => {
      const text = md(`${head}x-vendor: [${'1,'.repeat(SKILL_LIMITS.frontMatterTokens)}1]`);
      expect(problemsOf(parseSkillMarkdown(text))).toEqual(
        refusal(
          `the front matter has more than ${SKILL_LIMITS.frontMatterTokens} YAML tokens (keys, values, indicators, comments, line ends)`,
        ),
      );
    });
  });

  it.each([
    ['a missing name', 'description: d', 'name', 'is required'],
    ['an empty name', 'name: ""\ndescription: d', 'name', 'must not be empty'],
    ['a name of 65 characters', `name: ${'a'.repeat(65)}\ndescription: d`, 'name', /at most 64/],
    ['an upper-case name', 'name: Drafting\ndescription: d', 'name', /lower-case/],
    ['an underscore', 'name: draft_email\ndescription: d', 'name', /lower-case/],
    ['a leading hyphen', 'name: -draft\ndescription: d', 'name', /not starting or ending/],
    ['two hyphens in a row', 'name: draft--email\ndescription: d', 'name', /single hyphens/],
    ['a number as name', 'name: 42\ndescription: d', 'name', 'must be a string'],
    ['a missing description', 'name: a', 'description', 'is required'],
    ['a blank description', 'name: a\ndescription: "  "', 'description', 'must not be empty'],
    [
      'a description of 1025 characters',
      `name: a\ndescription: ${'d'.repeat(1025)}`,
      'description',
      /at most 1024/,
    ],
    ['nested metadata', 'name: a\ndescription: d\nmetadata:\n  x: [1]', 'metadata.x', /strings/],
    ['metadata as a list', 'name: a\ndescription: d\nmetadata: [1]', 'metadata', /record|object/i],
    ['an empty license', 'name: a\ndescription: d\nlicense: ""', 'license', /./],
  ])('refuses %s', (_label, frontMatter, path, message) => {
    const problems = problemsOf(parseSkillMarkdown(md(frontMatter)));
    expect(problems).toEqual([
      {
        path,
        message: typeof message === 'string' ? message : expect.stringMatching(message),
      },
    ]);
  });

  it('requires the name to equal the folder name', () => {
    expect(problemsOf(parseSkillMarkdown(VALID, 'emails'))).toEqual([
      { path: 'name', message: 'must equal the folder name "emails"' },
    ]);
  });

  it('refuses a skill without instructions', () => {
    expect(problemsOf(parseSkillMarkdown(md('name: a\ndescription: d', '  \n')))).toEqual([
      {
        path: 'SKILL.md',
        message: 'has no instructions: the Markdown after the front matter is empty',
      },
    ]);
  });

  it('refuses a SKILL.md over the size limit', () => {
    const big = md('name: a\ndescription: d', 'x'.repeat(SKILL_LIMITS.skillMdBytes));
    expect(problemsOf(parseSkillMarkdown(big))).toEqual([
      { path: 'SKILL.md', message: `is larger than ${SKILL_LIMITS.skillMdBytes} bytes` },
    ]);
  });

  it('reports every problem at once, readable in one log line', () => {
    const problems = problemsOf(parseSkillMarkdown(md('name: Bad_Name\nlicense: MIT', ''), 'x'));
    expect(problems.map((p) => p.path)).toEqual(['name', 'description', 'SKILL.md']);
    expect(describeProblems(problems)).toMatch(
      /^name: must be lower-case .*; description: is required; SKILL.md: has no instructions/,
    );
  });
});
