/**
 * The client SDK (`packages/client`, its built module) in Node.js against two API
 * replicas and a gateway on PostgreSQL and Redis: a stream resumed on the other replica after a
 * dropped connection, and after a TCP connection really cut by a proxy; an approval decided from
 * the stream and a turn's held calls decided at once (`decideAll`); the refresh callback, typed
 * errors, the knowledge, memory and skill calls, and a tool call to a node connected with the
 * SDK's `NodeClient`. The same scenarios run in Chromium
 * (client-sdk.browser.test.ts).
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  runEntry,
  startServiceProcess,
  startTcpProxy,
  textReply,
  toolCallsReply,
  type ServiceProcess,
} from '@agent-backend/testing';
import { AgentBackendClient, ApiError, type AgentEvent } from '../packages/client/src/index.js';
import { NodeClient } from '../packages/client/src/node.js';
import { startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { requireBuild } from './helpers.js';
// @ts-expect-error plain JavaScript shared with the browser test
import * as scenarios from './client-scenarios.mjs';

const CLIENT = 'packages/client/dist/index.js';
const moduleUrl = pathToFileURL(join(REPO_ROOT, CLIENT)).href;

describe('client SDK in Node.js', () => {
  let cluster: AgentCluster;
  let worker: ServiceProcess;
  let gateway: ServiceProcess;
  let alice: string;

  beforeAll(async () => {
    requireBuild(CLIENT);
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0' });
    // Documents are ingested by the worker.
    worker = await startServiceProcess({
      entry: 'apps/worker/dist/main.js',
      env: { ...cluster.env, INSTANCE_ID: 'worker-sdk' },
    });
    // Nodes connect to a gateway on the same engines.
    gateway = await startServiceProcess({
      entry: 'apps/gateway/dist/main.js',
      env: { ...cluster.env, INSTANCE_ID: 'gateway-sdk' },
    });
    alice = await cluster.token('alice-sdk');
  }, 120_000);
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await gateway?.stop('SIGKILL');
    await cluster?.stop();
  });
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-sdk',
    modelName,
  });

  it('streams typed events and resumes on the other replica after the connection drops', async () => {
    cluster.model.script('sdk-resume', [
      {
        kind: 'stream',
        pieces: [
          { text: 'one ' },
          { waitMs: 800 },
          { text: 'two ' },
          { text: 'three' },
          { finish: 'stop' },
        ],
      },
    ]);
    const result = await scenarios.streamAndResume({
      moduleUrl,
      baseUrl: cluster.api[0]!.url,
      resumeBaseUrl: cluster.api[1]!.url,
      token: alice,
      llm: llm('sdk-resume'),
    });
    expect(result.text).toBe('one two three');
    expect(result.types[0]).toBe('session');
    expect(result.last).toMatchObject({ type: 'done', session_id: result.sessionId });
    expect(result.types.filter((t: string) => t === 'session')).toHaveLength(1);
    // The second request resumed from the last event seen, on the other replica.
    expect(result.requests).toHaveLength(2);
    expect(result.requests[1]).toMatchObject({
      method: 'GET',
      path: `/api/agent/sessions/${result.sessionId}/stream`,
      lastEventId: `${result.runId}:2`,
      origin: cluster.api[1]!.url,
    });
  });

  it('decides a held tool call from the stream', async () => {
    cluster.model.script('sdk-approve', [
      toolCallsReply([
        { name: 'write_todos', args: { todos: [{ content: 'Ship it', status: 'pending' }] } },
      ]),
      textReply('Planned.'),
    ]);
    const result = await scenarios.approveFromStream({
      moduleUrl,
      baseUrl: cluster.api[0]!.url,
      token: alice,
      llm: llm('sdk-approve'),
    });
    expect(result.decision).toMatchObject({ decision: 'approve', status: 'accepted' });
    expect(result.types).toEqual(
      expect.arrayContaining(['approval_request', 'approval_result', 'todos', 'done']),
    );
    expect(result.types.at(-1)).toBe('done');
  });

  it('refreshes a refused token through the callback, and from a refresh token', async () => {
    const issued = await runEntry(
      'apps/all-in-one/dist/token-issue.js',
      ['carol-sdk'],
      cluster.env,
    );
    const { refreshToken, accessToken } = JSON.parse(issued.stdout) as {
      refreshToken: string;
      accessToken: string;
    };
    const result = await scenarios.refreshOnUnauthorized({
      moduleUrl,
      baseUrl: cluster.api[1]!.url,
      freshToken: accessToken,
      refreshToken,
    });
    expect(result).toMatchObject({
      user: 'carol-sdk',
      calls: 1,
      total: 0,
      refreshedUser: 'carol-sdk',
      refused: { name: 'UnauthorizedError', status: 401, code: 'unauthorized' },
    });
  });

  it('manages knowledge bases, memories and skills, with typed errors', async () => {
    const client = new AgentBackendClient({ baseUrl: cluster.api[0]!.url, token: alice });
    const base = await client.knowledgeBases.create({ name: 'SDK notes' });
    expect((await client.knowledgeBases.list()).map((b) => b.id)).toContain(base.id);
    const document = await client.knowledgeBases.addDocument(base.id, {
      name: 'refunds.md',
      content: 'Refunds are paid within 14 days of the return.',
      type: 'markdown',
    });
    await expect
      .poll(async () => (await client.knowledgeBases.documents(base.id))[0]?.status, {
        timeout: 15_000,
      })
      .toBe('ready');
    const hits = await client.knowledgeBases.search('refunds paid', [base.id]);
    expect(hits[0]).toMatchObject({ document_id: document.id });
    const chunks = await client.knowledgeBases.previewChunks({ content: 'a\n\nb' });
    expect(chunks.length).toBeGreaterThan(0);
    expect(await client.memories.list()).toMatchObject({ memories: [] });
    expect(await client.memories.clear()).toEqual({ deleted: 0 });
    expect((await client.skills.list()).map((s) => s.name)).toContain('drafting-emails');
    await client.knowledgeBases.delete(base.id);
    const missing = await client.knowledgeBases.delete(base.id).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ApiError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    const invalid = await client.nodes
      .callTool({ node_type: 'desktop', tool_name: '' })
      .catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 400, code: 'invalid_request' });
    expect((invalid as ApiError).details).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: 'tool_name' })]),
    );
  });

  it('resumes a run after its TCP connection is really cut mid-stream', async () => {
    cluster.model.script('sdk-cut', [
      {
        kind: 'stream',
        pieces: [
          { text: 'one ' },
          { waitMs: 2_000 },
          { text: 'two ' },
          { text: 'three' },
          { finish: 'stop' },
        ],
      },
    ]);
    const proxy = await startTcpProxy({
      host: '127.0.0.1',
      port: Number(new URL(cluster.api[0]!.url).port),
    });
    try {
      const client = new AgentBackendClient({
        baseUrl: `http://127.0.0.1:${proxy.port}`,
        token: alice,
        resume: { delayMs: 50 },
      });
      const run = client.invoke({
        message: 'Count slowly',
        llm_config: llm('sdk-cut'),
        sandbox_mode: 'none',
      });
      const events: AgentEvent[] = [];
      for await (const event of run) {
        events.push(event);
        if (event.type === 'message_chunk' && proxy.accepted === 1) {
          // The network drops the connection (RST both ways), then comes back.
          proxy.setMode('drop');
          proxy.setMode('forward');
        }
      }
      const text = events
        .filter((e) => e.type === 'message_chunk')
        .map((e) => (e as { content: string }).content)
        .join('');
      expect(text).toBe('one two three');
      expect(events.filter((e) => e.type === 'session')).toHaveLength(1);
      expect(events.at(-1)).toMatchObject({ type: 'done', session_id: run.sessionId });
      // The resume went out on a new connection.
      expect(proxy.accepted).toBeGreaterThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  });

  it('decides the held calls of a turn at once with decideAll', async () => {
    cluster.model.script('sdk-batch', [
      toolCallsReply([
        { name: 'write_todos', args: { todos: [{ content: 'First', status: 'pending' }] } },
        { name: 'write_todos', args: { todos: [{ content: 'Second', status: 'pending' }] } },
      ]),
      textReply('Planned.'),
    ]);
    const client = new AgentBackendClient({ baseUrl: cluster.api[0]!.url, token: alice });
    const run = client.invoke({
      message: 'Plan it twice',
      llm_config: llm('sdk-batch'),
      sandbox_mode: 'none',
      hitl_config: {},
    });
    const held: string[] = [];
    const outcomes: unknown[] = [];
    let answer: unknown;
    for await (const event of run) {
      if (event.type === 'approval_request') held.push(event.request_id);
      if (event.type === 'approval_result') outcomes.push(event.outcome);
      if (held.length === 2 && answer === undefined) {
        answer = await client.decideAll(run.runId!, [
          { request_id: held[0]!, decision: 'approve' },
          { request_id: held[1]!, decision: 'reject', message: 'Not this one' },
        ]);
      }
    }
    expect(answer).toEqual({
      run_id: run.runId,
      decisions: [
        { request_id: held[0], decision: 'approve', status: 'accepted' },
        { request_id: held[1], decision: 'reject', status: 'accepted' },
      ],
    });
    expect(outcomes.sort()).toEqual(['approved', 'rejected']);
  });

  it("calls a tool on the user's node (the SDK's NodeClient) and lists it", async () => {
    const node = new NodeClient({
      url: gateway.url,
      kind: 'desktop',
      userId: 'alice-sdk',
      nodeId: 'sdk-laptop',
      token: alice,
      tools: {
        echo: {
          description: 'Echo the text',
          writes: false,
          handler: (args) => `echo: ${String(args.text)}`,
        },
      },
    });
    try {
      await node.start();
      const client = new AgentBackendClient({ baseUrl: cluster.api[1]!.url, token: alice });
      const { nodes } = await client.nodes.list();
      expect(nodes).toEqual([
        expect.objectContaining({ node_id: 'sdk-laptop', available_tools: ['echo'] }),
      ]);
      const result = await client.nodes.callTool({
        node_type: 'desktop',
        node_id: 'sdk-laptop',
        tool_name: 'echo',
        arguments: { text: 'hi' },
      });
      expect(result).toMatchObject({ success: true, text: 'echo: hi' });
    } finally {
      await node.close();
    }
  });
});
