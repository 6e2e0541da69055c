/**
 * Metrics: `GET /metrics` of the split roles (api, gateway, worker on Redis and PostgreSQL),
 * scraped and parsed as Prometheus text while the test makes HTTP requests, an agent run that
 * calls a tool on a device connected to the gateway, a HITL approval and a knowledge-ingestion
 * job. Counters are compared before and after; no timing is asserted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  parsePrometheusText,
  startScriptedModel,
  textReply,
  toolCallsReply,
  type PrometheusText,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke } from './agent-helpers.js';
import { startCluster, type Cluster } from './cluster.js';
import { callApi } from './knowledge-helpers.js';
import { connectClockDevice, type TestSocket } from './ws-client.js';

const METRICS_TOKEN = 'metrics-scrape-token-for-tests';

async function scrape(baseUrl: string, token = METRICS_TOKEN): Promise<PrometheusText> {
  const res = await fetch(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

/** Scrapes until `check` passes (a worker counts a job just after the document is stored). */
async function eventually(
  baseUrl: string,
  check: (metrics: PrometheusText) => boolean,
  timeoutMs = 20_000,
): Promise<PrometheusText> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const metrics = await scrape(baseUrl);
    if (check(metrics) || Date.now() > deadline) return metrics;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('Prometheus metrics of the split roles', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  let device: TestSocket;
  let alice: string;
  const api = () => cluster.apis[0]!.url;
  const gateway = () => cluster.gateways[0]!.url;
  const worker = () => cluster.workers[0]!.url;
  const llm = (modelName: string) => ({ baseUrl: model.baseUrl, apiKey: 'sk-m', modelName });

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 1,
      apis: 1,
      workers: 1,
      env: { MCP_ALLOW_PRIVATE_NETWORKS: 'true', METRICS_TOKEN },
    });
    alice = await cluster.token('alice');
    device = await connectClockDevice(
      cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_alice', node_id: 'mac', token: alice }),
    );
  }, 120_000);
  afterAll(async () => {
    device?.ws.terminate();
    await cluster?.stop();
    await model?.close();
  });

  it('answers 401 without the token, with a wrong one and with a user access token', async () => {
    for (const url of [api(), gateway(), worker()]) {
      const none = await fetch(`${url}/metrics`);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await none.json()).toMatchObject({ error: { code: 'unauthorized' } });
      for (const wrong of [`${METRICS_TOKEN}x`, 'short', alice]) {
        const res = await fetch(`${url}/metrics`, {
          headers: { authorization: `Bearer ${wrong}` },
        });
        expect(res.status).toBe(401);
      }
      const basic = Buffer.from(`x:${METRICS_TOKEN}`).toString('base64');
      expect(
        (await fetch(`${url}/metrics`, { headers: { authorization: `Basic ${basic}` } })).status,
      ).toBe(401);
    }
  });

  it('serves process metrics and each role its own families', async () => {
    for (const url of [api(), gateway(), worker()]) {
      const metrics = await scrape(url);
      expect(metrics.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(metrics.types.get('nodejs_eventloop_lag_p99_seconds')).toBe('gauge');
      expect(metrics.types.get('agent_backend_http_server_request_duration_seconds')).toBe(
        'histogram',
      );
      expect(metrics.types.get('agent_backend_agent_runs_total')).toBe('counter');
    }
  });

  it('labels requests with the route template, never the raw URL', async () => {
    const before = await scrape(api());
    const id = `kb-${randomUUID()}`;
    for (let i = 0; i < 3; i++) expect((await fetch(`${api()}/healthz`)).status).toBe(200);
    expect(
      (await callApi(api(), alice, 'GET', `/api/knowledge-bases/${id}/documents`)).status,
    ).toBe(404);
    expect((await callApi(api(), alice, 'DELETE', `/api/knowledge-bases/${id}`)).status).toBe(404);
    expect((await fetch(`${api()}/no/such/${id}`)).status).toBe(404);

    const res = await fetch(`${api()}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    const text = await res.text();
    expect(text).not.toContain(id);
    const after = parsePrometheusText(text);
    const count = (metrics: PrometheusText, labels: Record<string, string>) =>
      metrics.value('agent_backend_http_server_request_duration_seconds_count', labels);
    const moved = (labels: Record<string, string>) => count(after, labels) - count(before, labels);
    expect(moved({ method: 'GET', route: '/healthz', status: '200' })).toBe(3);
    expect(
      moved({ method: 'GET', route: '/api/knowledge-bases/:id/documents', status: '404' }),
    ).toBe(1);
    expect(moved({ method: 'DELETE', route: '/api/knowledge-bases/:id', status: '404' })).toBe(1);
    expect(moved({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    // Every route label is a template or `unmatched`.
    const routes = new Set(
      after
        .series('agent_backend_http_server_request_duration_seconds_count')
        .map((s) => s.labels.route),
    );
    for (const route of routes) expect(route).toMatch(/^(\/[\w:./-]*|unmatched)$/);
  });

  it('counts an agent run, its model requests and a node tool call through the gateway', async () => {
    const [apiBefore, gatewayBefore] = await Promise.all([scrape(api()), scrape(gateway())]);
    model.script('m-tool', [
      toolCallsReply([{ id: 'call_1', name: 'read_clock', args: {} }]),
      textReply('It is 09:30.'),
    ]);
    const stream = await invoke(api(), alice, {
      message: 'What time is it on my mac?',
      llm_config: llm('m-tool'),
    });
    const events = (await stream.ended).map((e) => e.data);
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ result: '09:30' });
    expect(events.at(-1)).toMatchObject({ type: 'done' });

    const after = await eventually(
      api(),
      (m) =>
        m.value('agent_backend_agent_runs_total') >
        apiBefore.value('agent_backend_agent_runs_total'),
    );
    const delta = (name: string, labels?: Record<string, string>) =>
      after.value(name, labels) - apiBefore.value(name, labels);
    expect(delta('agent_backend_agent_runs_total', { mode: 'agent', outcome: 'done' })).toBe(1);
    expect(delta('agent_backend_agent_run_duration_seconds_count', { mode: 'agent' })).toBe(1);
    expect(after.value('agent_backend_agent_runs_active')).toBe(0);
    expect(after.value('agent_backend_agent_streams_open')).toBe(0);
    expect(delta('agent_backend_model_time_to_first_token_seconds_count')).toBe(2);
    // By model: the usage the scripted model reported for the run's two requests, as `done` sums it.
    const usage = (
      events.at(-1) as unknown as { usage: { prompt_tokens: number; completion_tokens: number } }
    ).usage;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(delta('agent_backend_model_tokens_total', { model: 'm-tool', kind: 'prompt' })).toBe(
      usage.prompt_tokens,
    );
    expect(delta('agent_backend_model_tokens_total', { model: 'm-tool', kind: 'completion' })).toBe(
      usage.completion_tokens,
    );
    expect(delta('agent_backend_node_tool_calls_total', { outcome: 'ok' })).toBe(1);
    expect(delta('agent_backend_node_tool_call_duration_seconds_count', { outcome: 'ok' })).toBe(1);
    expect(
      delta('agent_backend_bus_messages_published_total', { kind: 'request' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      delta('agent_backend_bus_request_duration_seconds_count', { outcome: 'ok' }),
    ).toBeGreaterThanOrEqual(1);

    const gw = await scrape(gateway());
    const gwDelta = (name: string, labels?: Record<string, string>) =>
      gw.value(name, labels) - gatewayBefore.value(name, labels);
    expect(gw.value('agent_backend_gateway_connections', { endpoint: 'desktop' })).toBe(1);
    expect(gw.value('agent_backend_gateway_connections', { endpoint: 'web' })).toBe(0);
    // The call went out to the device and its result came back.
    expect(
      gwDelta('agent_backend_gateway_frames_total', { endpoint: 'desktop', direction: 'out' }),
    ).toBe(1);
    expect(
      gwDelta('agent_backend_gateway_frames_total', { endpoint: 'desktop', direction: 'in' }),
    ).toBe(1);
    expect(gwDelta('agent_backend_bus_messages_received_total', { kind: 'request' })).toBe(1);
    expect(gwDelta('agent_backend_bus_messages_published_total', { kind: 'reply' })).toBe(1);
  });

  it('counts a HITL approval by outcome', async () => {
    const before = await scrape(api());
    model.script('m-hitl', [
      toolCallsReply([
        {
          id: 'call_t',
          name: 'write_todos',
          args: { todos: [{ content: 'Ship', status: 'pending' }] },
        },
      ]),
      textReply('Planned.'),
    ]);
    const stream = await invoke(api(), alice, {
      message: 'Plan',
      llm_config: llm('m-hitl'),
      hitl_config: {},
    });
    const request = await stream.waitFor((e) => e.data.type === 'approval_request');
    // While the run waits for the decision, its stream is open and the run active.
    const waiting = await scrape(api());
    expect(waiting.value('agent_backend_agent_streams_open')).toBe(1);
    expect(waiting.value('agent_backend_agent_runs_active')).toBe(1);
    const decided = await callApi(
      api(),
      alice,
      'POST',
      `/api/agent/approvals/${request.data.request_id as string}/decision`,
      { decision: 'approve' },
    );
    expect(decided.status).toBe(200);
    expect((await stream.ended).at(-1)!.data.type).toBe('done');
    const after = await eventually(
      api(),
      (m) =>
        m.value('agent_backend_agent_runs_total') > before.value('agent_backend_agent_runs_total'),
    );
    const delta = (name: string, labels?: Record<string, string>) =>
      after.value(name, labels) - before.value(name, labels);
    expect(delta('agent_backend_hitl_approvals_requested_total')).toBe(1);
    expect(delta('agent_backend_hitl_approvals_total', { outcome: 'approved' })).toBe(1);
    expect(delta('agent_backend_hitl_approvals_total')).toBe(1);
    expect(
      delta('agent_backend_http_server_request_duration_seconds_count', {
        method: 'POST',
        route: '/api/agent/approvals/:request_id/decision',
        status: '200',
      }),
    ).toBe(1);
  });

  it('counts a knowledge-ingestion job: enqueued by the api, run by the worker', async () => {
    const [apiBefore, workerBefore] = await Promise.all([scrape(api()), scrape(worker())]);
    const base = (await callApi(api(), alice, 'POST', '/api/knowledge-bases', { name: 'Ops' }))
      .body as { id: string };
    const added = await callApi(api(), alice, 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'notes.md',
      type: 'markdown',
      content: '# Runbook\n\nRestart the worker when queues back up.\n\n## Alerts\n\nPage on 5xx.',
    });
    expect(added.status).toBe(202);
    const apiAfter = await scrape(api());
    expect(
      apiAfter.value('agent_backend_jobs_added_total', { queue: 'kb-ingest' }) -
        apiBefore.value('agent_backend_jobs_added_total', { queue: 'kb-ingest' }),
    ).toBe(1);

    const done = (m: PrometheusText) =>
      m.value('agent_backend_jobs_total', { queue: 'kb-ingest', outcome: 'completed' }) >
      workerBefore.value('agent_backend_jobs_total', { queue: 'kb-ingest', outcome: 'completed' });
    const after = await eventually(worker(), done);
    expect(done(after)).toBe(true);
    const delta = (name: string, labels?: Record<string, string>) =>
      after.value(name, labels) - workerBefore.value(name, labels);
    expect(delta('agent_backend_jobs_total', { queue: 'kb-ingest', outcome: 'completed' })).toBe(1);
    expect(delta('agent_backend_job_duration_seconds_count', { queue: 'kb-ingest' })).toBe(1);
    expect(delta('agent_backend_knowledge_documents_ingested_total')).toBe(1);
    expect(delta('agent_backend_knowledge_chunks_ingested_total')).toBeGreaterThanOrEqual(1);
    expect(delta('agent_backend_knowledge_ingestion_failures_total')).toBe(0);
    // Queue depth of every queue the worker processes, by state, read from BullMQ.
    for (const queue of ['scheduled-tasks', 'chat-messages', 'kb-ingest']) {
      expect(
        after.series('agent_backend_jobs_queue_depth', { queue, state: 'waiting' }),
      ).toHaveLength(1);
      expect(after.value('agent_backend_jobs_queue_depth', { queue, state: 'failed' })).toBe(0);
    }
  });

  it('never writes the token to a log line', () => {
    const processes = [...cluster.apis, ...cluster.gateways, ...cluster.workers];
    const logs = processes.flatMap((p) => [...p.stdout, ...p.stderr]).join('\n');
    expect(logs).toContain('"msg":"request"');
    expect(logs).not.toContain(METRICS_TOKEN);
  });

  it('is 404 with METRICS_ENABLED=false', async () => {
    const off = await cluster.startReplica('gateway', 'gateway-no-metrics', {
      METRICS_ENABLED: 'false',
    });
    const res = await fetch(`${off.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 'not_found' } });
    expect((await fetch(`${off.url}/healthz`)).status).toBe(200);
  });
});
