/**
 * Memory: `enable_memory` through `POST /api/agent/invoke` on two API replicas sharing
 * Redis and PostgreSQL, with the scripted model (which records every request, so the test sees
 * the system prompt and the tools offered): saving, recalling in the prompt and with
 * `memory_search`, isolation between users, mode rules, approval of writes, concurrent runs on
 * both replicas; and the `/api/memories` endpoints (paging, filtering, deleting).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster, type SseEvent } from './agent-helpers.js';

const FACT = 'Alice prefers green tea without sugar';

describe('long-term memory in agent runs', () => {
  let cluster: AgentCluster;
  let alice: string;
  let bob: string;

  beforeAll(async () => {
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
    [alice, bob] = await Promise.all([cluster.token('alice-mem'), cluster.token('bob-mem')]);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-memory',
    modelName,
  });
  const systemPrompt = (modelName: string, index = 0) =>
    String(cluster.model.requests(modelName)[index]!.body.messages![0]!.content);
  const tools = (modelName: string, index = 0) =>
    (cluster.model.requests(modelName)[index]!.body.tools ?? []).map((t) => t.function.name);
  /** How many memories `userId` has in the store. */
  const rowCount = async (userId: string) =>
    (
      await cluster.sql<{ n: number }>(
        'SELECT count(*)::int AS n FROM memories WHERE user_id = $1',
        [userId],
      )
    )[0]!.n;
  /** Runs the scripted `replies` through invoke and returns the stream's events when it ended. */
  const scripted = async (
    replica: 0 | 1,
    token: string,
    modelName: string,
    replies: Parameters<AgentCluster['model']['script']>[1],
    body: Record<string, unknown>,
  ) => {
    cluster.model.script(modelName, replies);
    const stream = await invoke(cluster.api[replica]!.url, token, {
      llm_config: llm(modelName),
      enable_memory: true,
      ...body,
    });
    const events = (await stream.ended).map((e: SseEvent) => e.data);
    expect(events.at(-1)!.type).toBe('done');
    return events;
  };
  const saveCall = (text: string, id = 'call_save') =>
    toolCallsReply([{ id, name: 'memory_save', args: { text } }]);
  const memories = async (token: string, query = '') => {
    const res = await fetch(`${cluster.api[0]!.url}/api/memories${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('saves a memory in one session and puts it in the prompt of another, on another replica', async () => {
    cluster.model.script('mem-save', [
      toolCallsReply([{ name: 'memory_save', args: { text: FACT, tags: ['preferences'] } }]),
      textReply('Noted.'),
    ]);
    const saved = await invoke(cluster.api[0]!.url, alice, {
      message: 'Remember that I like green tea without sugar.',
      llm_config: llm('mem-save'),
      enable_memory: true,
    });
    const events = await saved.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const result = events.find((e) => e.data.type === 'tool_result')!.data;
    expect(result.is_error).not.toBe(true);
    expect(result.result).toMatch(/^Saved as memory mem_/);
    expect(tools('mem-save')).toEqual(
      expect.arrayContaining(['memory_search', 'memory_save', 'memory_delete']),
    );

    cluster.model.script('mem-recall', [textReply('Green tea, no sugar.')]);
    const recalled = await invoke(cluster.api[1]!.url, alice, {
      message: 'What tea should you make me?',
      llm_config: llm('mem-recall'),
      enable_memory: true,
    });
    expect((await recalled.ended).at(-1)!.data.type).toBe('done');
    expect(systemPrompt('mem-recall')).toContain(FACT);
  });

  it("never shows one user's memories to another", async () => {
    cluster.model.script('mem-bob', [textReply('I do not know.')]);
    const run = await invoke(cluster.api[1]!.url, bob, {
      message: 'What tea do I like?',
      llm_config: llm('mem-bob'),
      enable_memory: true,
    });
    expect((await run.ended).at(-1)!.data.type).toBe('done');
    expect(systemPrompt('mem-bob')).not.toContain('green tea');
    expect(await memories(bob)).toEqual({ status: 200, body: { memories: [], next_cursor: null } });
    const own = await memories(alice);
    const id = (own.body.memories as Array<{ id: string }>)[0]!.id;
    const foreign = await fetch(`${cluster.api[1]!.url}/api/memories/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${bob}` },
    });
    expect(foreign.status).toBe(404);
    expect(await foreign.json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await memories(alice)).body.memories).toHaveLength(1);
  });

  it('offers no memory tools without enable_memory, and only memory_search in ask mode', async () => {
    cluster.model.script('mem-off', [textReply('ok')]);
    await (
      await invoke(cluster.api[0]!.url, alice, { message: 'Hi', llm_config: llm('mem-off') })
    ).ended;
    expect(tools('mem-off').filter((name) => name.startsWith('memory_'))).toEqual([]);
    expect(systemPrompt('mem-off')).not.toContain(FACT);

    cluster.model.script('mem-ask', [textReply('ok')]);
    await (
      await invoke(cluster.api[0]!.url, alice, {
        message: 'Which tea?',
        llm_config: llm('mem-ask'),
        enable_memory: true,
        mode: 'ask',
      })
    ).ended;
    expect(tools('mem-ask').filter((name) => name.startsWith('memory_'))).toEqual([
      'memory_search',
    ]);
  });

  it('lists, filters and deletes the caller’s memories; deleting really deletes', async () => {
    const listed = await memories(alice, '?q=green');
    expect(listed.status).toBe(200);
    const [memory] = listed.body.memories as Array<{ id: string; text: string }>;
    expect(memory).toMatchObject({ text: FACT });
    expect((await memories(alice, '?q=coffee')).body.memories).toEqual([]);
    expect((await memories(alice, '?cursor=not-a-cursor')).status).toBe(400);

    const removed = await fetch(`${cluster.api[1]!.url}/api/memories/${memory!.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(removed.status).toBe(204);
    expect((await memories(alice)).body.memories).toEqual([]);
    const rows = await cluster.sql<{ n: number }>(
      'SELECT count(*)::int AS n FROM memories WHERE user_id = $1',
      ['alice-mem'],
    );
    expect(rows[0]!.n).toBe(0);

    cluster.model.script('mem-after', [textReply('Which tea do you like?')]);
    await (
      await invoke(cluster.api[0]!.url, alice, {
        message: 'What tea should you make me?',
        llm_config: llm('mem-after'),
        enable_memory: true,
      })
    ).ended;
    expect(systemPrompt('mem-after')).not.toContain(FACT);

    const all = await fetch(`${cluster.api[0]!.url}/api/memories`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${alice}` },
    });
    expect(await all.json()).toEqual({ deleted: 0 });
  });
  it('finds a memory saved in one session with memory_search in another session', async () => {
    const dave = await cluster.token('dave-mem');
    await scripted(
      0,
      dave,
      'mem-dave-save',
      [saveCall('Dave keeps bees on his roof'), textReply('ok')],
      {
        message: 'Remember that I keep bees on my roof.',
      },
    );
    const events = await scripted(
      1,
      dave,
      'mem-dave-search',
      [
        toolCallsReply([{ id: 'call_s', name: 'memory_search', args: { query: 'bees' } }]),
        textReply('You keep bees.'),
      ],
      { message: 'What animals do I look after?' },
    );
    const result = events.find((e) => e.type === 'tool_result')!;
    expect(result).toMatchObject({ tool_call_id: 'call_s' });
    expect(result.is_error).not.toBe(true);
    expect(String(result.result)).toContain('Dave keeps bees on his roof');
    // The model got it as the tool message.
    const second = cluster.model.requests('mem-dave-search')[1]!.body.messages!;
    expect(String(second.find((m) => m.role === 'tool')!.content)).toContain('bees on his roof');
  });

  it('offers no memory writes in plan mode and refuses a scripted memory_save in ask and plan', async () => {
    const frank = await cluster.token('frank-mem');
    for (const mode of ['ask', 'plan'] as const) {
      const model = `mem-mode-${mode}`;
      const events = await scripted(
        0,
        frank,
        model,
        [saveCall(`Frank said this in ${mode} mode`), textReply('ok')],
        { message: 'Remember my shoe size is 44.', mode },
      );
      expect(tools(model).filter((name) => name.startsWith('memory_'))).toEqual(['memory_search']);
      const result = events.find((e) => e.type === 'tool_result')!;
      expect(result).toMatchObject({ tool_call_id: 'call_save', is_error: true });
    }
    expect(await rowCount('frank-mem')).toBe(0);
  });

  it('holds memory_save for approval: rejected writes nothing, approved writes the row', async () => {
    const erin = await cluster.token('erin-mem');
    const decide = async (requestId: string, decision: string) => {
      const res = await fetch(
        `${cluster.api[1]!.url}/api/agent/approvals/${encodeURIComponent(requestId)}/decision`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${erin}` },
          body: JSON.stringify({ decision }),
        },
      );
      expect(res.status).toBe(200);
    };
    for (const decision of ['reject', 'approve'] as const) {
      const model = `mem-hitl-${decision}`;
      const text = `Erin's bike is red (${decision})`;
      cluster.model.script(model, [saveCall(text), textReply('ok')]);
      const stream = await invoke(cluster.api[0]!.url, erin, {
        message: 'Remember my bike is red.',
        llm_config: llm(model),
        enable_memory: true,
        hitl_config: {},
      });
      const request = await stream.waitFor((e) => e.data.type === 'approval_request');
      expect(request.data).toMatchObject({
        tool_name: 'memory_save',
        tool_args: { text },
      });
      // Nothing is written while it waits.
      expect(await rowCount('erin-mem')).toBe(0);
      await decide(String(request.data.request_id), decision);
      const events = (await stream.ended).map((e) => e.data);
      expect(events.at(-1)!.type).toBe('done');
      const result = events.find((e) => e.type === 'tool_result')!;
      if (decision === 'reject') {
        expect(result.is_error).toBe(true);
        expect(await rowCount('erin-mem')).toBe(0);
      } else {
        expect(result.is_error).not.toBe(true);
        const rows = await cluster.sql<{ text: string }>(
          'SELECT content AS text FROM memories WHERE user_id = $1',
          ['erin-mem'],
        );
        expect(rows.map((r) => r.text)).toEqual([text]);
      }
    }
  });

  it("keeps every write of one user's concurrent runs on both replicas", async () => {
    const carol = await cluster.token('carol-mem');
    const facts = [
      'Carol works as an airline pilot',
      'Carol is allergic to peanuts',
      'Carol lives in Porto near the river',
      'Carol plays the cello on Sundays',
      'Carol drives an old blue Volvo',
      'Carol speaks Finnish with her grandmother',
    ];
    await Promise.all(
      facts.map((fact, i) =>
        scripted((i % 2) as 0 | 1, carol, `mem-par-${i}`, [saveCall(fact), textReply('ok')], {
          message: `Remember: ${fact}.`,
        }),
      ),
    );
    const rows = await cluster.sql<{ text: string }>(
      'SELECT content AS text FROM memories WHERE user_id = $1',
      ['carol-mem'],
    );
    expect(rows.map((r) => r.text).sort()).toEqual([...facts].sort());
  });

  it('pages through the memories with limit and next_cursor', async () => {
    const carol = await cluster.token('carol-mem');
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await memories(carol, `?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      const items = page.body.memories as Array<{ id: string; text: string }>;
      expect(items.length).toBeLessThanOrEqual(4);
      seen.push(...items.map((m) => m.text));
      cursor = page.body.next_cursor as string | null;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(2);
    expect(new Set(seen).size).toBe(6);
    expect(seen.every((text) => text.startsWith('Carol'))).toBe(true);
    expect((await memories(carol, '?limit=0')).status).toBe(400);
  });

  it("deletes all of the caller's memories and no one else's", async () => {
    const carol = await cluster.token('carol-mem');
    const daveBefore = await rowCount('dave-mem');
    expect(daveBefore).toBeGreaterThanOrEqual(1);
    const res = await fetch(`${cluster.api[1]!.url}/api/memories`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${carol}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ deleted: 6 });
    expect(await rowCount('carol-mem')).toBe(0);
    expect((await memories(carol)).body.memories).toEqual([]);
    expect(await rowCount('dave-mem')).toBe(daveBefore);
    expect(await rowCount('erin-mem')).toBe(1);
  });
});
