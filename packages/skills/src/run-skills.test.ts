import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentTool, ToolContext } from '@agent-backend/agent-runtime';
import { SkillsConfig, type AgentEvent } from '@agent-backend/protocol';
import { createPgliteDatabase, migrate, type Database } from '@agent-backend/store';
import { loadSharedSkills, SkillCatalog } from './catalog.js';
import { prepareRunSkills, type RunSkills } from './run-skills.js';
import { SkillRepository } from './skill-repository.js';

let db: Database;
let catalog: SkillCatalog;
let repo: SkillRepository;
beforeAll(async () => {
  db = await createPgliteDatabase({ vector: false });
  await migrate(db);
  repo = new SkillRepository(db);
  catalog = new SkillCatalog(await loadSharedSkills(), repo);
  await repo.put('alice', {
    frontMatter: { name: 'trip-budgets', description: 'Builds a travel budget for a trip.' },
    body: '# Trip budgets\n\nList transport, lodging and food.',
    files: [
      { path: 'rates.csv', content: Buffer.from('city,rate\nOslo,1.2\n') },
      { path: 'logo.png', content: Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe]) },
    ],
  });
});
afterAll(async () => {
  await db?.close();
});

function context(userId: string, events: AgentEvent[]): ToolContext {
  return {
    userId,
    sessionId: 'sess_1',
    runId: 'run_1',
    mode: 'ask',
    signal: new AbortController().signal,
    state: { todos: [] },
    emit: (event) => events.push(event),
  };
}

async function prepare(
  userId: string,
  message: string,
  skills: Partial<SkillsConfig> | undefined = {},
): Promise<RunSkills> {
  const run = await prepareRunSkills(catalog, {
    userId,
    message,
    skills: skills && SkillsConfig.parse(skills),
  });
  if (!run) throw new Error('skills should be on');
  return run;
}

const loadSkill = (run: RunSkills): AgentTool => {
  const [tool] = run.tools;
  if (!tool) throw new Error('load_skill should be offered');
  return tool;
};

describe('prepareRunSkills', () => {
  it('is off when the request has no skills', async () => {
    expect(
      await prepareRunSkills(catalog, { userId: 'alice', message: 'hi', skills: undefined }),
    ).toBe(undefined);
  });

  it('matches the message, shows the matched instructions and lists the rest', async () => {
    const run = await prepare('bob', 'Please draft an email to my landlord about the heating');
    expect(run.event).toEqual({
      type: 'skills',
      activated: [{ name: 'drafting-emails', reason: 'matched', score: expect.any(Number) }],
      missing: [],
    });
    expect(run.promptSection).toContain('## Active skill: drafting-emails');
    expect(run.promptSection).toContain('# Drafting emails');
    expect(run.promptSection).toContain('- references/tone-guide.md (');
    expect(run.promptSection).toMatch(/## Other skills\n.*up to 2 more in this run/);
    expect(run.promptSection).toContain('- writing-plans: Turns a goal');
    expect(run.tools.map((t) => [t.name, t.writes])).toEqual([['load_skill', false]]);
  });

  it("activates named skills, reports unknown ones and those over max_skills, and never another user's", async () => {
    const run = await prepare('bob', 'anything', {
      skill_names: ['reviewing-code', 'trip-budgets', 'writing-plans', 'drafting-emails'],
      max_skills: 2,
    });
    expect(run.event).toEqual({
      type: 'skills',
      activated: [
        { name: 'reviewing-code', reason: 'explicit' },
        { name: 'writing-plans', reason: 'explicit' },
      ],
      missing: ['trip-budgets'],
      over_limit: ['drafting-emails'],
    });
    expect(run.promptSection).not.toContain('## Other skills');
  });

  it('gives a user their own skills, matched like the shared ones', async () => {
    const run = await prepare('alice', 'Make a travel budget for my trip to Oslo');
    expect(run.activated()).toEqual([
      { name: 'trip-budgets', reason: 'matched', score: expect.any(Number) },
    ]);
    expect(run.promptSection).toContain('List transport, lodging and food.');
  });

  it('with auto_match off, activates nothing and lists every skill for load_skill', async () => {
    const run = await prepare('bob', 'hello', { auto_match: false });
    expect(run.event.activated).toEqual([]);
    expect(run.promptSection).toContain('## Other skills');
    expect(run.tools).toHaveLength(1);
  });
});

describe('load_skill', () => {
  it('loads a listed skill, reports it in a new skills event, and stops at max_skills', async () => {
    const run = await prepare('bob', 'hello', { max_skills: 2 });
    const tool = loadSkill(run);
    const events: AgentEvent[] = [];
    const ctx = context('bob', events);

    const first = await tool.execute({ name: 'writing-plans' }, ctx);
    expect(first.isError).toBeUndefined();
    expect(first.content).toMatch(/^Skill "writing-plans" is now active\. Turns a goal/);
    expect(first.content).toContain('# Writing plans');
    expect(events).toEqual([
      { type: 'skills', activated: [{ name: 'writing-plans', reason: 'loaded' }], missing: [] },
    ]);

    expect((await tool.execute({ name: 'writing-plans' }, ctx)).content).toBe(
      'Skill "writing-plans" is already active: follow its instructions.',
    );
    await tool.execute({ name: 'reviewing-code' }, ctx);
    const third = await tool.execute({ name: 'drafting-emails' }, ctx);
    expect(third).toEqual({
      content:
        '2 skills are active, the most this run allows (max_skills 2): writing-plans, ' +
        'reviewing-code. No more can be loaded.',
      isError: true,
    });
    expect(run.activated()).toEqual([
      { name: 'writing-plans', reason: 'loaded' },
      { name: 'reviewing-code', reason: 'loaded' },
    ]);
    expect(events).toHaveLength(2);
  });

  it('stays within max_skills when two loads run at the same time', async () => {
    const run = await prepare('bob', 'hello', { max_skills: 1 });
    const tool = loadSkill(run);
    const ctx = context('bob', []);
    const results = await Promise.all([
      tool.execute({ name: 'writing-plans' }, ctx),
      tool.execute({ name: 'reviewing-code' }, ctx),
    ]);
    expect(results.map((r) => r.isError ?? false)).toEqual([false, true]);
    expect(run.activated()).toEqual([{ name: 'writing-plans', reason: 'loaded' }]);
  });

  it("refuses unknown names, another user's skill among them", async () => {
    const run = await prepare('bob', 'hello');
    const result = await loadSkill(run).execute({ name: 'trip-budgets' }, context('bob', []));
    expect(result).toEqual({
      content: expect.stringMatching(/^There is no skill "trip-budgets"\. Skills you can load: /),
      isError: true,
    });
  });

  it('reads a text file of an active skill, and refuses binary, unlisted and inactive ones', async () => {
    const run = await prepare('alice', 'budget for a trip to Oslo, travel costs');
    const tool = loadSkill(run);
    const ctx = context('alice', []);
    expect(await tool.execute({ name: 'trip-budgets', file: 'rates.csv' }, ctx)).toEqual({
      content: 'city,rate\nOslo,1.2\n',
    });
    expect(await tool.execute({ name: 'trip-budgets', file: 'logo.png' }, ctx)).toEqual({
      content: '"logo.png" is a binary file (6 bytes); it cannot be shown.',
      isError: true,
    });
    expect(await tool.execute({ name: 'trip-budgets', file: '../x' }, ctx)).toEqual({
      content: 'Skill "trip-budgets" has no file "../x". Its files: logo.png, rates.csv.',
      isError: true,
    });
    expect(
      await tool.execute({ name: 'writing-plans', file: 'templates/plan-template.md' }, ctx),
    ).toEqual({
      content: 'Skill "writing-plans" is not active; load it first with {"name": "writing-plans"}.',
      isError: true,
    });
    await tool.execute({ name: 'writing-plans' }, ctx);
    const template = await tool.execute(
      { name: 'writing-plans', file: 'templates/plan-template.md' },
      ctx,
    );
    expect(template.content).toMatch(/^# Plan: <outcome in one sentence>/);
  });

  it('gives the full instructions of an active skill the prompt had to cut', async () => {
    const long = `# Long\n\n${'Rule.\n'.repeat(4000)}The last rule.`;
    await repo.put('carol', {
      frontMatter: { name: 'long-rules', description: 'Many rules.' },
      body: long,
      files: [],
    });
    const run = await prepare('carol', 'x', { skill_names: ['long-rules'] });
    expect(run.promptSection).not.toContain('The last rule.');
    const result = await loadSkill(run).execute({ name: 'long-rules' }, context('carol', []));
    expect(result.content).toMatch(/^Skill "long-rules" in full: Many rules\.\n\n# Long/);
    expect(result.content).toContain('The last rule.');
  });

  it('tells the model about invalid arguments', async () => {
    const run = await prepare('bob', 'hello');
    const result = await loadSkill(run).execute({}, context('bob', []));
    expect(result).toMatchObject({
      isError: true,
      content: expect.stringMatching(/^Invalid arguments for load_skill: name/),
    });
  });
});
