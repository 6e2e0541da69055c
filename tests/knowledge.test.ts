import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  runEntry,
  startScriptedModel,
  startServiceProcess,
  textReply,
  toolCallsReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import type { KnowledgeBase, KnowledgeDocument } from '@agent-backend/protocol';
import { requireBuild, tempDir } from './helpers.js';
import { invoke } from './agent-helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';

const FAQ = [
  '# Shipping',
  'Parcels to Iceland take two weeks by sea. '.repeat(40).trim(),
  '# Refunds',
  'Refunds are paid within five business days after the return arrives.',
].join('\n\n');

/**
 * Knowledge bases end to end on the all-in-one embedded engine (PGlite, in-process job queue, so
 * the API's `kb-ingest` job runs in the same process's worker). PostgreSQL is covered by the
 * repository tests in packages/knowledge.
 */
describe('knowledge bases on the all-in-one embedded engine', () => {
  const env = {
    DATA_DIR: tempDir('knowledge'),
    LOG_LEVEL: 'info',
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  let service: ServiceProcess;
  let model: ScriptedModel;
  const tokens: Record<string, string> = {};
  const llm = (modelName: string) => ({ baseUrl: model.baseUrl, apiKey: 'sk-kb-1', modelName });

  async function api(user: string | undefined, method: string, path: string, body?: unknown) {
    const res = await fetch(`${service.url}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(user ? { authorization: `Bearer ${tokens[user]}` } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as unknown };
  }

  async function waitForReady(user: string, baseId: string, docId: string) {
    for (let i = 0; i < 200; i++) {
      const { body } = await api(user, 'GET', `/api/knowledge-bases/${baseId}/documents`);
      const doc = (body as { documents: KnowledgeDocument[] }).documents.find(
        (d) => d.id === docId,
      );
      if (doc && doc.status !== 'pending') return doc;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('document never left pending');
  }

  /** Runs one conversation whose model searches once; returns the tool message it got back. */
  async function searchAs(user: string, name: string, baseIds: string[], query: string) {
    model.script(name, [
      toolCallsReply([{ name: 'search_knowledge_base', args: { query } }]),
      textReply('Done.'),
    ]);
    const events = await (
      await invoke(service.url, tokens[user], {
        message: 'When do I get my money back?',
        knowledge_base_ids: baseIds,
        llm_config: llm(name),
      })
    ).ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const [first, second] = model.requests(name);
    expect(first!.body.tools!.map((t) => t.function.name)).toContain('search_knowledge_base');
    const toolMessage = second!.body.messages!.find((m) => m.role === 'tool');
    return String(toolMessage!.content);
  }

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE);
    model = await startScriptedModel();
    service = await startServiceProcess({ entry: MAIN, env });
    for (const user of ['alice', 'bob']) {
      const issued = await runEntry(TOKEN_ISSUE, [user], env);
      tokens[user] = (JSON.parse(issued.stdout) as { accessToken: string }).accessToken;
    }
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('ingests a document, lets the agent find it, isolates users and forgets deleted ones', async () => {
    const created = await api('alice', 'POST', '/api/knowledge-bases', { name: 'Support' });
    expect(created.status).toBe(201);
    const base = created.body as KnowledgeBase;
    expect((await api('alice', 'GET', '/api/knowledge-bases')).body).toEqual({
      knowledge_bases: [base],
    });
    expect((await api('bob', 'GET', '/api/knowledge-bases')).body).toEqual({ knowledge_bases: [] });

    const added = await api('alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'faq.md',
      type: 'markdown',
      content: FAQ,
    });
    expect(added.status).toBe(202);
    const doc = added.body as KnowledgeDocument;
    expect(doc).toMatchObject({ status: 'pending', knowledge_base_id: base.id, name: 'faq.md' });
    const ready = await waitForReady('alice', base.id, doc.id);
    expect(ready).toMatchObject({ status: 'ready', error: null });
    expect(ready.chunk_count).toBeGreaterThan(1);

    const found = JSON.parse(await searchAs('alice', 'kb-alice', [base.id], 'refunds paid')) as {
      results: Array<Record<string, unknown>>;
    };
    expect(found.results).toHaveLength(1);
    expect(found.results[0]).toMatchObject({
      knowledge_base_id: base.id,
      document_id: doc.id,
      document_name: 'faq.md',
      chunk_index: ready.chunk_count - 1,
    });
    expect(found.results[0]!.content).toContain('Refunds are paid within five business days');

    // Bob neither sees nor searches nor changes Alice's base: 404 like an unknown id.
    const notFound = { error: { code: 'not_found', message: 'unknown knowledge base' } };
    for (const [method, path, body] of [
      ['GET', `/api/knowledge-bases/${base.id}/documents`, undefined],
      ['POST', `/api/knowledge-bases/${base.id}/documents`, { name: 'x', content: 'x' }],
      ['DELETE', `/api/knowledge-bases/${base.id}`, undefined],
      ['GET', `/api/knowledge-bases/kb_unknown/documents`, undefined],
    ] as const) {
      expect(await api('bob', method, path, body)).toEqual({ status: 404, body: notFound });
    }
    expect(
      (await api('bob', 'DELETE', `/api/knowledge-bases/${base.id}/documents/${doc.id}`)).status,
    ).toBe(404);
    expect(await searchAs('bob', 'kb-bob', [base.id], 'refunds paid')).toBe(
      'No matching passages found.',
    );

    expect(
      (await api('alice', 'DELETE', `/api/knowledge-bases/${base.id}/documents/${doc.id}`)).status,
    ).toBe(204);
    expect(await searchAs('alice', 'kb-alice-after', [base.id], 'refunds paid')).toBe(
      'No matching passages found.',
    );
    expect((await api('alice', 'DELETE', `/api/knowledge-bases/${base.id}`)).status).toBe(204);
    expect((await api('alice', 'GET', '/api/knowledge-bases')).body).toEqual({
      knowledge_bases: [],
    });
  });

  it('offers no search tool without knowledge_base_ids', async () => {
    model.script('kb-none', [textReply('Hi.')]);
    await (
      await invoke(service.url, tokens.alice, { message: 'hi', llm_config: llm('kb-none') })
    ).ended;
    const tools = model.requests('kb-none')[0]!.body.tools ?? [];
    expect(tools.map((t) => t.function.name)).not.toContain('search_knowledge_base');
  });

  it('validates bodies with field errors and requires a token', async () => {
    const created = await api('alice', 'POST', '/api/knowledge-bases', { name: 'V' });
    const base = created.body as KnowledgeBase;
    const bad = await api('alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'a.pdf',
      content: 'x',
      type: 'pdf',
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({
      error: { code: 'invalid_request', details: [expect.objectContaining({ path: 'type' })] },
    });
    expect((await api('alice', 'POST', '/api/knowledge-bases', { name: ' ' })).status).toBe(400);
    expect((await api(undefined, 'GET', '/api/knowledge-bases')).status).toBe(401);
    expect(
      (
        await api(undefined, 'POST', `/api/knowledge-bases/${base.id}/documents`, {
          name: 'a',
          content: 'b',
        })
      ).status,
    ).toBe(401);
  });
});
