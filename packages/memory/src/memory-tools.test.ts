import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  executeToolCall,
  ToolRegistry,
  type ToolContext,
  type ToolOutput,
} from '@agent-backend/agent-runtime';
import { createOpenAiEmbedder } from '@agent-backend/search';
import type { AgentEvent, ConversationMode } from '@agent-backend/protocol';
import {
  createPgliteDatabase,
  migrate,
  prepareVectorSearch,
  type Database,
} from '@agent-backend/store';
import { conceptEmbedding, startScriptedModel, type ScriptedModel } from '@agent-backend/testing';
import { MemoryRepository } from './memory-repository.js';
import { memoryTools } from './memory-tools.js';
import { DEFAULT_MEMORY_PROMPT_LIMITS, memoryPromptSection } from './prompt-section.js';

let db: Database;
let endpoint: ScriptedModel;
let repo: MemoryRepository;
beforeAll(async () => {
  db = await createPgliteDatabase();
  await migrate(db);
  await prepareVectorSearch(db);
  endpoint = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
  repo = new MemoryRepository(db, {
    embedder: createOpenAiEmbedder({ baseUrl: endpoint.baseUrl, model: 'concepts-1' }),
  });
});
afterAll(async () => {
  await db?.close();
  await endpoint?.close();
});

/** Calls a memory tool of `userId`'s run through the runtime's own execution path. */
async function call(
  userId: string,
  mode: ConversationMode,
  name: string,
  args: Record<string, unknown>,
): Promise<ToolOutput & { events: AgentEvent[] }> {
  const registry = new ToolRegistry();
  for (const tool of memoryTools(repo, { userId, sessionId: 'sess_1', runId: 'run_1' })) {
    registry.add(tool);
  }
  const events: AgentEvent[] = [];
  const context: ToolContext = {
    userId,
    sessionId: 'sess_1',
    runId: 'run_1',
    mode,
    signal: new AbortController().signal,
    state: { todos: [] },
    emit: (event) => events.push(event),
  };
  const output = await executeToolCall(
    { id: 'call_1', name, arguments: JSON.stringify(args) },
    { registry, context, emit: (event) => events.push(event) },
  );
  return { ...output, events };
}

describe('memory tools', () => {
  it('offers memory_search in every mode and the writes only in agent mode', () => {
    const registry = new ToolRegistry();
    for (const tool of memoryTools(repo, { userId: 'u', sessionId: 's', runId: 'r' })) {
      registry.add(tool);
    }
    const offered = (mode: ConversationMode) => registry.offered(mode).map((t) => t.name);
    expect(offered('agent')).toEqual(['memory_search', 'memory_save', 'memory_delete']);
    expect(offered('ask')).toEqual(['memory_search']);
    expect(offered('plan')).toEqual(['memory_search']);
    expect(registry.get('memory_save')!.parameters).toMatchObject({
      type: 'object',
      required: ['text'],
    });
  });

  it('saves, finds and deletes the run user’s memories', async () => {
    const saved = await call('tess', 'agent', 'memory_save', {
      text: 'Tess is training for the Berlin marathon.',
      tags: ['sport'],
    });
    expect(saved.isError).toBeUndefined();
    const id = /memory (mem_[\w-]+)/.exec(saved.content)![1]!;
    expect(await repo.get('tess', id)).toMatchObject({
      text: 'Tess is training for the Berlin marathon.',
      tags: ['sport'],
      source_session_id: 'sess_1',
      source_run_id: 'run_1',
    });

    const found = await call('tess', 'ask', 'memory_search', { query: 'marathon' });
    expect(JSON.parse(found.content)).toEqual({
      results: [
        {
          id,
          text: 'Tess is training for the Berlin marathon.',
          tags: ['sport'],
          updated_at: expect.any(String),
          score: expect.any(Number),
        },
      ],
    });
    const updated = await call('tess', 'agent', 'memory_save', {
      text: 'tess is training for the berlin marathon!',
    });
    expect(updated.content).toContain(`Updated memory ${id}`);

    // Another user's run can neither find nor delete it.
    expect((await call('ugo', 'agent', 'memory_search', { query: 'marathon' })).content).toBe(
      'No matching memories found.',
    );
    const foreign = await call('ugo', 'agent', 'memory_delete', { id });
    expect(foreign).toMatchObject({ content: `No memory with id ${id}.`, isError: true });
    expect(await repo.get('tess', id)).toBeDefined();

    const deleted = await call('tess', 'agent', 'memory_delete', { id });
    expect(deleted.content).toBe(`Deleted memory ${id}.`);
    expect(await repo.get('tess', id)).toBeUndefined();
  });

  it('refuses the write tools in ask and plan modes without touching the store', async () => {
    const before = await repo.save('vera', { text: 'Vera keeps bees.' });
    for (const mode of ['ask', 'plan'] as const) {
      const save = await call('vera', mode, 'memory_save', { text: 'Vera sells honey.' });
      expect(save).toMatchObject({ isError: true });
      expect(save.content).toContain(`not available in ${mode} mode`);
      const del = await call('vera', mode, 'memory_delete', { id: before.memory.id });
      expect(del).toMatchObject({ isError: true });
    }
    expect((await repo.list('vera')).memories.map((m) => m.text)).toEqual(['Vera keeps bees.']);
  });

  it('answers invalid arguments with an error the model can read', async () => {
    const blank = await call('walt', 'agent', 'memory_save', { text: '   ' });
    expect(blank).toMatchObject({ isError: true });
    expect(blank.content).toContain('text');
    const symbols = await call('walt', 'agent', 'memory_save', { text: '?!' });
    expect(symbols).toMatchObject({ isError: true, content: expect.stringContaining('Not saved') });
    expect((await repo.list('walt')).memories).toEqual([]);
  });
});

describe('memory prompt section', () => {
  it('is empty for a user without memories', async () => {
    expect(await memoryPromptSection(repo, 'nobody', 'hello')).toBe('');
  });

  it('lists the most relevant memories first, then recent ones, within the bounds', async () => {
    const cars = await repo.save('xena', { text: 'Her cars are serviced every spring.' });
    const saved = [];
    for (let i = 0; i < 6; i++) {
      saved.push(
        await repo.save('xena', {
          text: `Hobby ${i}: ${['chess', 'knitting', 'rowing', 'baking', 'hiking', 'opera'][i]}`,
        }),
      );
    }
    await repo.save('yuri', { text: 'Yuri takes the automobile to the shop.' });
    const section = await memoryPromptSection(
      repo,
      'xena',
      'Where do I take the automobile for upkeep?',
    );
    const lines = section.split('\n').slice(1);
    expect(lines).toHaveLength(DEFAULT_MEMORY_PROMPT_LIMITS.maxMemories);
    expect(lines[0]).toBe(`- [${cars.memory.id}] Her cars are serviced every spring.`);
    expect(section).not.toContain('Yuri');
    expect(section).toMatch(/^Long-term memory:/);

    // Without anything relevant (no embedder: words only), the recent ones fill the list.
    const wordsOnly = new MemoryRepository(db);
    const recent = await memoryPromptSection(wordsOnly, 'xena', 'zzz', {
      maxMemories: 2,
      maxChars: 2_000,
    });
    expect(recent.split('\n').slice(1)).toEqual([
      `- [${saved[5]!.memory.id}] Hobby 5: opera`,
      `- [${saved[4]!.memory.id}] Hobby 4: hiking`,
    ]);
  });

  it('cuts memories to the character budget', async () => {
    const long = 'Z'.repeat(300);
    await repo.save('zoe', { text: `Zoe notes ${long}`, tags: ['a'] });
    await repo.save('zoe', { text: `Zoe lists ${'Q'.repeat(300)}` });
    const section = await memoryPromptSection(repo, 'zoe', 'zoe', {
      maxMemories: 5,
      maxChars: 600,
    });
    const lines = section.split('\n').slice(1);
    expect(lines).toHaveLength(2);
    const texts = lines.map((l) => l.replace(/^- \[mem_[^\]]+\] /, ''));
    expect(texts.join('').length).toBeLessThanOrEqual(600);
    expect(texts[1]!.endsWith('…')).toBe(true);
    // Less than 200 characters of room: the next memory is left out rather than cut.
    const tight = await memoryPromptSection(repo, 'zoe', 'zoe', { maxMemories: 5, maxChars: 450 });
    expect(tight.split('\n').slice(1)).toHaveLength(1);
  });
});
