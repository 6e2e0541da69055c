/**
 * Issue 13, memory: `enable_memory` through `POST /api/agent/invoke` on two API replicas sharing
 * Redis and PostgreSQL, with the scripted model (which records every request, so the test sees
 * the system prompt and the tools offered), and the `/api/memories` endpoints.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

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
});
