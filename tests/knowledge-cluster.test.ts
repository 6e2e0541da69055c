import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  conceptEmbedding,
  startScriptedModel,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import type { KnowledgeBase, KnowledgeDocument } from '@agent-backend/protocol';
import { startCluster, type Cluster } from './cluster.js';
import { callApi, searchThroughAgent, waitForIngestion } from './knowledge-helpers.js';

const EMBEDDING_MODEL = 'concepts-e2e';
const CARS = 'Our cars are serviced every spring by the workshop.';
const FAQ = [
  '# Shipping',
  'Parcels to Iceland take two weeks by sea. '.repeat(40).trim(),
  '# Fleet',
  CARS,
].join('\n\n');

/**
 * Knowledge bases on the distributed engine: two API replicas and two worker processes sharing
 * Redis (BullMQ) and PostgreSQL, embeddings from a scripted OpenAI-compatible endpoint. Each
 * replica has its own embeddings API key, so the test can tell which worker is embedding.
 */
describe('knowledge bases across API and worker replicas on PostgreSQL', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  const tokens: Record<string, string> = {};
  const workers: Record<string, ServiceProcess> = {};
  const api = (i: number, user: string | undefined, method: string, path: string, body?: unknown) =>
    callApi(cluster.apis[i]!.url, user ? tokens[user] : undefined, method, path, body);
  let chats = 0;
  const search = (i: number, user: string, baseIds: string[], query: string) =>
    searchThroughAgent({
      baseUrl: cluster.apis[i]!.url,
      token: tokens[user]!,
      model,
      modelName: `kb-chat-${++chats}`,
      knowledgeBaseIds: baseIds,
      query,
    });

  beforeAll(async () => {
    model = await startScriptedModel({ embed: (text) => conceptEmbedding(text) });
    cluster = await startCluster({
      gateways: 0,
      apis: 0,
      env: {
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        EMBEDDINGS_BASE_URL: model.baseUrl,
        EMBEDDINGS_MODEL: EMBEDDING_MODEL,
        EMBEDDINGS_TIMEOUT_MS: '120000',
        JOBS_LOCK_MS: '2000',
      },
    });
    // One after another, so that apis[0] is api-1 and apis[1] is api-2.
    for (const id of ['api-1', 'api-2']) {
      await cluster.startReplica('api', id, { EMBEDDINGS_API_KEY: `sk-embed-${id}` });
    }
    for (const id of ['worker-1', 'worker-2']) {
      workers[id] = await cluster.startReplica('worker', id, {
        EMBEDDINGS_API_KEY: `sk-embed-${id}`,
      });
    }
    for (const user of ['alice', 'bob']) tokens[user] = await cluster.token(user);
  });
  afterAll(async () => {
    await cluster?.stop();
    await model?.close();
  });

  it('ingests in a worker, finds by meaning through the agent, isolates users, forgets deletions', async () => {
    const base = (await api(0, 'alice', 'POST', '/api/knowledge-bases', { name: 'Ops' }))
      .body as KnowledgeBase;
    const added = await api(1, 'alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'faq.md',
      type: 'markdown',
      content: FAQ,
    });
    expect(added.status).toBe(202);
    const doc = added.body as KnowledgeDocument;
    const ready = await waitForIngestion(cluster.apis[0]!.url, tokens.alice!, base.id, doc.id);
    expect(ready).toMatchObject({ status: 'ready', error: null });
    // Embedded by a worker process, not by an API replica.
    const embeddedBy = model.requests(EMBEDDING_MODEL).map((r) => r.headers.authorization);
    expect(embeddedBy.length).toBeGreaterThan(0);
    expect(embeddedBy.every((h) => /^Bearer sk-embed-worker-[12]$/.test(h ?? ''))).toBe(true);

    // No word in common with the passage: only the vectors can find it.
    const found = await search(1, 'alice', [base.id], 'automobile upkeep');
    expect(found).not.toBe('No matching passages found.');
    const hits = (found as Exclude<typeof found, string>).results;
    expect(hits[0]).toEqual({
      knowledge_base_id: base.id,
      document_id: doc.id,
      document_name: 'faq.md',
      chunk_index: ready.chunk_count - 1,
      content: expect.stringContaining('cars are serviced'),
      score: expect.any(Number),
    });
    // The query was embedded by the API replica that ran the conversation.
    expect(model.requests(EMBEDDING_MODEL).at(-1)!.headers.authorization).toBe(
      'Bearer sk-embed-api-2',
    );

    // Over HTTP on the other replica: the same passage first, the query embedded there.
    const searched = await api(0, 'alice', 'POST', '/api/knowledge-bases/search', {
      query: 'automobile upkeep',
      knowledge_base_ids: [base.id],
    });
    expect(searched.status).toBe(200);
    expect((searched.body as { results: unknown[] }).results[0]).toEqual(hits[0]);
    expect(model.requests(EMBEDDING_MODEL).at(-1)!.headers.authorization).toBe(
      'Bearer sk-embed-api-1',
    );

    // Bob names Alice's base: nothing, and nothing that says it exists.
    expect(await search(0, 'bob', [base.id], 'automobile upkeep')).toBe(
      'No matching passages found.',
    );
    expect((await api(0, 'bob', 'GET', `/api/knowledge-bases/${base.id}/documents`)).status).toBe(
      404,
    );

    expect(
      (await api(0, 'alice', 'DELETE', `/api/knowledge-bases/${base.id}/documents/${doc.id}`))
        .status,
    ).toBe(204);
    expect(await search(1, 'alice', [base.id], 'automobile upkeep')).toBe(
      'No matching passages found.',
    );
  });

  it('finishes an ingestion whose worker was killed with SIGKILL while embedding', async () => {
    const base = (await api(0, 'alice', 'POST', '/api/knowledge-bases', { name: 'Kill' }))
      .body as KnowledgeBase;
    const before = model.requests(EMBEDDING_MODEL).length;
    model.scriptEmbeddings(EMBEDDING_MODEL, [{ kind: 'hang' }]);
    const doc = (
      await api(0, 'alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
        name: 'fleet.txt',
        content: CARS,
      })
    ).body as KnowledgeDocument;
    const hung = (await model.waitForRequests(EMBEDDING_MODEL, before + 1, 30_000))[before]!;
    const worker = /sk-embed-(worker-[12])$/.exec(hung.headers.authorization ?? '')?.[1];
    expect(worker).toBeDefined();
    expect(await workers[worker!]!.stop('SIGKILL')).toBe('SIGKILL');

    const ready = await waitForIngestion(
      cluster.apis[1]!.url,
      tokens.alice!,
      base.id,
      doc.id,
      60_000,
    );
    expect(ready).toMatchObject({ status: 'ready', chunk_count: 1 });
    const survivor = worker === 'worker-1' ? 'worker-2' : 'worker-1';
    expect(model.requests(EMBEDDING_MODEL).at(-1)!.headers.authorization).toBe(
      `Bearer sk-embed-${survivor}`,
    );
    const found = await search(0, 'alice', [base.id], 'automobile upkeep');
    expect(found).toMatchObject({ results: [{ document_id: doc.id, chunk_index: 0 }] });
  });

  it('re-embeds every ready document once when two workers start with another model', async () => {
    // This document and the one of the test above, embedded by the first model.
    const base = (await api(0, 'alice', 'POST', '/api/knowledge-bases', { name: 'Models' }))
      .body as KnowledgeBase;
    const doc = (
      await api(1, 'alice', 'POST', `/api/knowledge-bases/${base.id}/documents`, {
        name: 'faq.md',
        content: FAQ,
      })
    ).body as KnowledgeDocument;
    await waitForIngestion(cluster.apis[0]!.url, tokens.alice!, base.id, doc.id);
    const db = new pg.Client({ connectionString: cluster.env.DATABASE_URL });
    await db.connect();
    try {
      await db.query(`SET search_path TO "${cluster.env.DATABASE_SCHEMA!}"`);
      const progress = async (model: string) =>
        (
          await db.query<{ done: number; total: number }>(
            `SELECT count(*) FILTER (WHERE c.embedding_model = $1)::int AS done,
                    count(*)::int AS total
             FROM knowledge_chunks c
             JOIN knowledge_documents d ON d.document_id = c.document_id
             WHERE d.status = 'ready'`,
            [model],
          )
        ).rows[0]!;
      const { total } = await progress(EMBEDDING_MODEL);
      expect(total).toBeGreaterThan(1);

      for (const worker of Object.values(workers)) await worker.stop('SIGTERM');
      const next = `${EMBEDDING_MODEL}-v2`;
      await Promise.all(
        ['worker-3', 'worker-4'].map((id) =>
          cluster.startReplica('worker', id, {
            EMBEDDINGS_MODEL: next,
            EMBEDDINGS_API_KEY: `sk-embed-${id}`,
          }),
        ),
      );
      await vi.waitFor(async () => expect(await progress(next)).toEqual({ done: total, total }), {
        timeout: 60_000,
        interval: 250,
      });
      // Both workers queued the same jobs; each chunk was embedded once.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const embedded = model
        .requests(next)
        .reduce((n, r) => n + (r.body.input as string[]).length, 0);
      expect(embedded).toBe(total);
      const queued = cluster.workers
        .slice(-2)
        .filter((w) => w.stdout.some((line) => line.includes('queueing knowledge re-embedding')));
      expect(queued.length).toBeGreaterThan(0);
    } finally {
      await db.end();
    }
  });
});
