import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '@agent-backend/testing';
import {
  createServiceMetrics,
  MAX_MODEL_LABELS,
  NO_METRICS,
  OTHER_MODEL,
  UNMATCHED_ROUTE,
} from './index.js';

const read = async (metrics: ReturnType<typeof createServiceMetrics>) =>
  parsePrometheusText((await metrics.render()).body);

const spendUserCpu = () => {
  const start = process.cpuUsage();
  const deadline = Date.now() + 5_000;
  let sink = 0;
  while (process.cpuUsage(start).user === 0 && Date.now() < deadline) {
    for (let i = 0; i < 100_000; i++) sink += Math.sqrt(i);
  }
  return sink;
};

describe('createServiceMetrics', () => {
  it('gives each instance a registry of its own, so several roles share a process', async () => {
    const api = createServiceMetrics({ defaultLabels: { role: 'api' } });
    const gateway = createServiceMetrics({ defaultLabels: { role: 'gateway' } });
    api.http.request('GET', '/healthz', 200, 0.002);
    gateway.gateway.connections('web').inc();
    // The process collectors count CPU from when they were created, and the kernel may account
    // user time in whole ticks: spend CPU until the process's own counter moves.
    spendUserCpu();
    const fromApi = await read(api);
    const fromGateway = await read(gateway);
    expect(
      fromApi.value('agent_backend_http_server_request_duration_seconds_count', { role: 'api' }),
    ).toBe(1);
    expect(fromGateway.value('agent_backend_http_server_request_duration_seconds_count')).toBe(0);
    expect(
      fromGateway.value('agent_backend_gateway_connections', { endpoint: 'web', role: 'gateway' }),
    ).toBe(1);
    expect(fromApi.value('agent_backend_gateway_connections')).toBe(0);
    expect(fromApi.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect((await api.render()).contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('is the no-op set when disabled', async () => {
    const off = createServiceMetrics({ enabled: false });
    expect(off).toBe(NO_METRICS);
    expect(off.enabled).toBe(false);
    off.http.request('GET', '/x', 200, 1);
    off.agent.runStarted('agent')('done');
    off.gateway.frames('web', 'in').inc();
    expect((await off.render()).body).toBe('');
  });

  it('records HTTP requests by bounded labels, binding each combination once', async () => {
    const metrics = createServiceMetrics();
    for (const status of [200, 200, 404]) metrics.http.request('GET', '/items/:id', status, 0.01);
    metrics.http.request('PROPFIND', UNMATCHED_ROUTE, 404, 0.001);
    metrics.http.request('POST', '/items/:id', 201, 0.3);
    const text = await read(metrics);
    const count = (labels: Record<string, string>) =>
      text.value('agent_backend_http_server_request_duration_seconds_count', labels);
    expect(count({ method: 'GET', route: '/items/:id', status: '200' })).toBe(2);
    expect(count({ method: 'GET', route: '/items/:id', status: '404' })).toBe(1);
    expect(count({ method: 'POST', route: '/items/:id', status: '201' })).toBe(1);
    expect(count({ method: 'other', route: 'unmatched', status: '404' })).toBe(1);
    expect(
      text.value('agent_backend_http_server_request_duration_seconds_bucket', {
        method: 'POST',
        route: '/items/:id',
        le: '0.25',
      }),
    ).toBe(0);
  });

  it('counts runs by mode and outcome with their duration and the runs in progress', async () => {
    const metrics = createServiceMetrics();
    const first = metrics.agent.runStarted('agent');
    const second = metrics.agent.runStarted('ask');
    expect((await read(metrics)).value('agent_backend_agent_runs_active')).toBe(2);
    first('done');
    second('aborted');
    metrics.agent.tokens('gpt-4o', 120, 30);
    metrics.agent.tokens('gpt-4o', 0, 0);
    metrics.agent.tokens('qwen3', 7, 0);
    const text = await read(metrics);
    expect(text.value('agent_backend_agent_runs_active')).toBe(0);
    expect(text.value('agent_backend_agent_runs_total', { mode: 'agent', outcome: 'done' })).toBe(
      1,
    );
    expect(text.value('agent_backend_agent_runs_total', { mode: 'ask', outcome: 'aborted' })).toBe(
      1,
    );
    expect(text.value('agent_backend_agent_run_duration_seconds_count')).toBe(2);
    expect(
      text.value('agent_backend_model_tokens_total', { model: 'gpt-4o', kind: 'prompt' }),
    ).toBe(120);
    expect(
      text.value('agent_backend_model_tokens_total', { model: 'gpt-4o', kind: 'completion' }),
    ).toBe(30);
    expect(text.value('agent_backend_model_tokens_total', { model: 'qwen3', kind: 'prompt' })).toBe(
      7,
    );
    expect(
      text.series('agent_backend_model_tokens_total', { model: 'qwen3', kind: 'completion' }),
    ).toEqual([]);
  });

  it(`labels tokens by the first ${MAX_MODEL_LABELS} model names, the later ones as other`, async () => {
    const metrics = createServiceMetrics();
    for (let i = 0; i < MAX_MODEL_LABELS + 5; i += 1) metrics.agent.tokens(`model-${i}`, 1, 1);
    metrics.agent.tokens('model-0', 1, 0);
    metrics.agent.tokens('x'.repeat(300), 1, 0);
    const text = await read(metrics);
    const labels = new Set(
      text.series('agent_backend_model_tokens_total').map((s) => s.labels.model),
    );
    expect(labels.size).toBe(MAX_MODEL_LABELS + 1);
    expect(
      text.value('agent_backend_model_tokens_total', { model: 'model-0', kind: 'prompt' }),
    ).toBe(2);
    expect(
      text.value('agent_backend_model_tokens_total', { model: OTHER_MODEL, kind: 'prompt' }),
    ).toBe(6);
    expect(
      text.value('agent_backend_model_tokens_total', { model: OTHER_MODEL, kind: 'completion' }),
    ).toBe(5);
    expect(text.value('agent_backend_model_tokens_total')).toBe(2 * (MAX_MODEL_LABELS + 5) + 2);
  });

  it('reads queue depths at scrape time and leaves out a queue whose engine failed', async () => {
    const metrics = createServiceMetrics();
    let waiting = 3;
    metrics.jobs.watchDepth(['a', 'b'], async (queue) => {
      if (queue === 'b') throw new Error('redis is down');
      return { waiting, active: 1 };
    });
    let text = await read(metrics);
    expect(text.value('agent_backend_jobs_queue_depth', { queue: 'a', state: 'waiting' })).toBe(3);
    expect(text.value('agent_backend_jobs_queue_depth', { queue: 'a', state: 'delayed' })).toBe(0);
    expect(text.series('agent_backend_jobs_queue_depth', { queue: 'b' })).toEqual([]);
    waiting = 0;
    text = await read(metrics);
    expect(text.value('agent_backend_jobs_queue_depth', { queue: 'a', state: 'waiting' })).toBe(0);
    expect(text.value('agent_backend_jobs_queue_depth', { queue: 'a', state: 'active' })).toBe(1);
  });
});
