/**
 * Skills: `skills` through `POST /api/agent/invoke` on two API replicas sharing Redis
 * and PostgreSQL (explicit, matched by the message or the session's earlier turns, missing,
 * over `max_skills`, loaded with `load_skill`; the `skills` event right after `session`; the
 * activated instructions in the system prompt the scripted model receives), the `/api/skills`
 * endpoints (upload as text or zip, listing, isolation between users, invalid SKILL.md or zip),
 * and an invalid skill in `SKILLS_DIR` logged at start.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply, writeZip } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { tempDir } from './helpers.js';

const TEA_SKILL = `---
name: brewing-tea
description: Explains how to brew tea well, with water temperature and steeping time.
---
Always give the water temperature in degrees Celsius and the steeping time in minutes.
`;

describe('skills in agent runs', () => {
  let cluster: AgentCluster;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    // The operator's folder: one valid skill and one whose front matter is wrong.
    const skillsDir = tempDir('skills-dir');
    mkdirSync(join(skillsDir, 'Bad_Skill'));
    writeFileSync(join(skillsDir, 'Bad_Skill', 'SKILL.md'), '---\nname: Bad_Skill\n---\nBody\n');
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0', SKILLS_DIR: skillsDir });
    [alice, bob] = await Promise.all([cluster.token('alice-sk'), cluster.token('bob-sk')]);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-skills',
    modelName,
  });
  const systemPrompt = (modelName: string) =>
    String(cluster.model.requests(modelName)[0]!.body.messages![0]!.content);
  const run = async (
    token: string,
    modelName: string,
    body: Record<string, unknown>,
    replies = [textReply('ok')],
  ) => {
    cluster.model.script(modelName, replies);
    const stream = await invoke(cluster.api[0]!.url, token, {
      llm_config: llm(modelName),
      ...body,
    });
    const events = await stream.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    return events.map((e) => e.data);
  };
  const api = (token: string, path: string, init: RequestInit = {}) =>
    fetch(`${cluster.api[1]!.url}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${token}`,
        ...(init.body ? { 'content-type': 'application/json' } : {}),
      },
    });

  it('activates named skills, reports missing ones, right after session', async () => {
    const events = await run(alice, 'sk-explicit', {
      message: 'Hello',
      skills: { skill_names: ['drafting-emails', 'no-such-skill'] },
    });
    expect(events[0]!.type).toBe('session');
    expect(events[1]).toEqual({
      type: 'skills',
      activated: [{ name: 'drafting-emails', reason: 'explicit' }],
      missing: ['no-such-skill'],
    });
    expect(systemPrompt('sk-explicit')).toContain('drafting-emails');
  });

  it('matches skills to the message when none are named', async () => {
    const events = await run(alice, 'sk-matched', {
      message: 'Please help me write a polite email to my landlord about the broken heater',
      skills: {},
    });
    const skills = events.find((e) => e.type === 'skills')!;
    expect(skills.activated).toEqual([
      expect.objectContaining({ name: 'drafting-emails', reason: 'matched' }),
    ]);
  });

  it('sends no skills event when the request has no skills', async () => {
    const events = await run(alice, 'sk-none', { message: 'Hello' });
    expect(events.some((e) => e.type === 'skills')).toBe(false);
  });

  it("uploads a user's skill that only that user sees and can use", async () => {
    const created = await api(alice, '/api/skills', {
      method: 'POST',
      body: JSON.stringify({ skill_md: TEA_SKILL }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual({
      name: 'brewing-tea',
      description: expect.stringContaining('brew tea'),
      created: true,
    });
    const listed = (await (await api(alice, '/api/skills')).json()) as {
      skills: Array<{ name: string; source: string }>;
    };
    expect(listed.skills).toContainEqual(
      expect.objectContaining({ name: 'brewing-tea', source: 'user' }),
    );
    expect(listed.skills).toContainEqual(
      expect.objectContaining({ name: 'drafting-emails', source: 'builtin' }),
    );
    const bobs = (await (await api(bob, '/api/skills')).json()) as {
      skills: Array<{ name: string }>;
    };
    expect(bobs.skills.map((s) => s.name)).not.toContain('brewing-tea');
    expect((await api(bob, '/api/skills/brewing-tea', { method: 'DELETE' })).status).toBe(404);

    const events = await run(alice, 'sk-user', {
      message: 'Hi',
      skills: { skill_names: ['brewing-tea'] },
    });
    expect(events[1]).toMatchObject({ activated: [{ name: 'brewing-tea', reason: 'explicit' }] });
    expect(systemPrompt('sk-user')).toContain('degrees Celsius');
    const bobRun = await run(bob, 'sk-bob', {
      message: 'Hi',
      skills: { skill_names: ['brewing-tea'] },
    });
    expect(bobRun[1]).toMatchObject({ activated: [], missing: ['brewing-tea'] });

    expect((await api(alice, '/api/skills/brewing-tea', { method: 'DELETE' })).status).toBe(204);
    const after = (await (await api(alice, '/api/skills')).json()) as {
      skills: Array<{ name: string }>;
    };
    expect(after.skills.map((s) => s.name)).not.toContain('brewing-tea');
  });

  it('refuses an invalid SKILL.md with every reason', async () => {
    const res = await api(alice, '/api/skills', {
      method: 'POST',
      body: JSON.stringify({ skill_md: '---\nname: Bad Name\n---\n' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; details: unknown[] } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.details.length).toBeGreaterThanOrEqual(2);
  });
  it("matches a follow-up by the words of the session's earlier user turns", async () => {
    const first = await run(alice, 'sk-turn-1', {
      message: 'Please draft an email to my landlord about the broken heater.',
    });
    const sessionId = first[0]!.session_id as string;
    // Nothing in the follow-up itself names a skill: alone it matches none.
    const alone = await run(alice, 'sk-turn-alone', {
      message: 'Make it friendlier, and a bit shorter.',
      skills: {},
    });
    expect(alone[1]).toEqual({ type: 'skills', activated: [], missing: [] });

    const followUp = await run(alice, 'sk-turn-2', {
      session_id: sessionId,
      message: 'Make it friendlier, and a bit shorter.',
      skills: {},
    });
    expect(followUp[1]).toEqual({
      type: 'skills',
      activated: [{ name: 'drafting-emails', reason: 'matched', score: expect.any(Number) }],
      missing: [],
    });
    expect(systemPrompt('sk-turn-2')).toContain('## Active skill: drafting-emails');
  });

  it('activates at most max_skills named skills and reports the rest as over_limit', async () => {
    const events = await run(alice, 'sk-over', {
      message: 'Hello',
      skills: {
        skill_names: ['writing-plans', 'drafting-emails', 'reviewing-code'],
        max_skills: 2,
      },
    });
    expect(events[1]).toEqual({
      type: 'skills',
      activated: [
        { name: 'writing-plans', reason: 'explicit' },
        { name: 'drafting-emails', reason: 'explicit' },
      ],
      missing: [],
      over_limit: ['reviewing-code'],
    });
    const prompt = systemPrompt('sk-over');
    expect(prompt).toContain('## Active skill: writing-plans');
    expect(prompt).toContain('## Active skill: drafting-emails');
    // The cut skill's instructions are not in the prompt (its body's checklist is not there).
    expect(prompt).not.toContain('## Active skill: reviewing-code');
    expect(prompt).not.toContain('**Correctness**: logic errors');
  });

  it('lets the model load a listed skill with load_skill (reason loaded)', async () => {
    const events = await run(
      alice,
      'sk-load',
      { message: 'Hello', skills: { auto_match: false } },
      [
        toolCallsReply([{ id: 'call_l', name: 'load_skill', args: { name: 'writing-plans' } }]),
        textReply('Loaded.'),
      ],
    );
    expect(events[1]).toEqual({ type: 'skills', activated: [], missing: [] });
    expect(systemPrompt('sk-load')).toContain('writing-plans');
    const result = events.find((e) => e.type === 'tool_result')!;
    expect(result.is_error).not.toBe(true);
    expect(result.result).toContain('Skill "writing-plans" is now active.');
    expect(events.filter((e) => e.type === 'skills').at(-1)).toEqual({
      type: 'skills',
      activated: [{ name: 'writing-plans', reason: 'loaded' }],
      missing: [],
    });
    // The instructions reached the model as the tool message.
    const second = cluster.model.requests('sk-load')[1]!.body.messages!;
    expect(String(second.find((m) => m.role === 'tool')!.content)).toContain(
      'Skill "writing-plans" is now active.',
    );
  });

  it('uploads a skill as a zip whose files the model lists and reads with load_skill', async () => {
    const zip = writeZip([
      {
        name: 'packing-lists/SKILL.md',
        data: '---\nname: packing-lists\ndescription: Writes packing lists for trips.\n---\nStart from the template.\n',
      },
      { name: 'packing-lists/templates/beach.md', data: '- sunscreen\n- towel\n' },
    ]);
    const created = await api(alice, '/api/skills', {
      method: 'POST',
      body: JSON.stringify({ zip_base64: zip.toString('base64') }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toEqual({
      name: 'packing-lists',
      description: 'Writes packing lists for trips.',
      created: true,
    });

    const events = await run(
      alice,
      'sk-zip',
      { message: 'Pack for the beach', skills: { skill_names: ['packing-lists'] } },
      [
        toolCallsReply([
          {
            id: 'call_f',
            name: 'load_skill',
            args: { name: 'packing-lists', file: 'templates/beach.md' },
          },
        ]),
        textReply('Done.'),
      ],
    );
    expect(events[1]).toMatchObject({ activated: [{ name: 'packing-lists', reason: 'explicit' }] });
    const prompt = systemPrompt('sk-zip');
    expect(prompt).toContain('Start from the template.');
    expect(prompt).toContain('templates/beach.md');
    const result = events.find((e) => e.type === 'tool_result')!;
    expect(result.is_error).not.toBe(true);
    expect(result.result).toBe('- sunscreen\n- towel\n');
    expect((await api(alice, '/api/skills/packing-lists', { method: 'DELETE' })).status).toBe(204);
  });

  it('refuses a bad zip with 400 invalid_request and the reasons', async () => {
    const notZip = await api(alice, '/api/skills', {
      method: 'POST',
      body: JSON.stringify({ zip_base64: Buffer.from('not a zip at all').toString('base64') }),
    });
    expect(notZip.status).toBe(400);
    const body = (await notZip.json()) as {
      error: { code: string; message: string; details: Array<{ path: string; message: string }> };
    };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.details.length).toBeGreaterThanOrEqual(1);
    expect(body.error.details[0]).toEqual({
      path: expect.any(String),
      message: expect.any(String),
    });

    const slip = await api(alice, '/api/skills', {
      method: 'POST',
      body: JSON.stringify({
        zip_base64: writeZip([
          { name: 'SKILL.md', data: '---\nname: slip\ndescription: Escapes.\n---\nx\n' },
          { name: '../outside.txt', data: 'x' },
        ]).toString('base64'),
      }),
    });
    expect(slip.status).toBe(400);
    const slipBody = (await slip.json()) as { error: { code: string; details: unknown[] } };
    expect(slipBody.error.code).toBe('invalid_request');
    expect(JSON.stringify(slipBody.error.details)).toContain('../outside.txt');
    const listed = (await (await api(alice, '/api/skills')).json()) as {
      skills: Array<{ name: string }>;
    };
    expect(listed.skills.map((s) => s.name)).not.toContain('slip');
  });

  it('logs an invalid skill of SKILLS_DIR at start with its reasons, and leaves it out', async () => {
    await expect
      .poll(() => cluster.logs(), { timeout: 20_000 })
      .toContain('invalid skill left out');
    const line = cluster
      .logs()
      .split('\n')
      .find((l) => l.includes('invalid skill left out'))!;
    expect(line).toContain('Bad_Skill');
    expect(line).toContain('description');
    const listed = (await (await api(bob, '/api/skills')).json()) as {
      skills: Array<{ name: string }>;
    };
    expect(listed.skills.map((s) => s.name)).not.toContain('Bad_Skill');
  });
});
