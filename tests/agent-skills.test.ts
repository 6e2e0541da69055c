/**
 * Issue 13, skills: `skills` through `POST /api/agent/invoke` on two API replicas sharing Redis
 * and PostgreSQL (explicit, matched, missing; the `skills` event right after `session`; the
 * activated instructions in the system prompt the scripted model receives), and the
 * `/api/skills` endpoints (upload, listing, isolation between users, invalid SKILL.md).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

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
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
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
  const run = async (token: string, modelName: string, body: Record<string, unknown>) => {
    cluster.model.script(modelName, [textReply('ok')]);
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
});
