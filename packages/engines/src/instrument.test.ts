import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryBus, createMemoryHub, type Bus } from '@agent-backend/bus';
import { createMemoryJobQueue, UnrecoverableJobError, type JobQueue } from '@agent-backend/jobs';
import { createServiceMetrics, type ServiceMetrics } from '@agent-backend/metrics';
import { parsePrometheusText } from '@agent-backend/testing';
import { instrumentBus, instrumentJobQueue } from './instrument.js';

const read = async (metrics: ServiceMetrics) => parsePrometheusText((await metrics.render()).body);

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

describe('instrumentBus', () => {
  const pair = () => {
    const hub = createMemoryHub();
    const metricsA = createServiceMetrics();
    const metricsB = createServiceMetrics();
    const a: Bus = instrumentBus(createMemoryBus({ hub, nodeId: 'a' }), metricsA.bus);
    const b: Bus = instrumentBus(createMemoryBus({ hub, nodeId: 'b' }), metricsB.bus);
    open.push(a, b);
    return { a, b, metricsA, metricsB };
  };

  it('counts messages and request/reply on both sides, by outcome', async () => {
    const { a, b, metricsA, metricsB } = pair();
    const got: unknown[] = [];
    await b.subscribe('news', (message) => void got.push(message));
    await b.respond('echo', (message) => message);
    await b.respond('fail', () => {
      throw Object.assign(new Error('no'), { code: 'NOPE' });
    });
    expect(a.nodeId).toBe('a');
    expect(await a.publish('news', 1)).toBe(1);
    expect(await a.request('echo', 'hi', { timeoutMs: 1_000 })).toBe('hi');
    await expect(a.request('fail', 'x', { timeoutMs: 1_000 })).rejects.toMatchObject({
      code: 'NOPE',
    });
    await expect(a.request('nobody', 'x', { timeoutMs: 1_000 })).rejects.toThrow();
    const aborted = new AbortController();
    await b.respond('slow', () => new Promise(() => {}));
    const pending = a.request('slow', 'x', { timeoutMs: 5_000, signal: aborted.signal });
    aborted.abort(new Error('caller gone'));
    await expect(pending).rejects.toThrow('caller gone');
    await expect(a.request('slow', 'x', { timeoutMs: 20 })).rejects.toThrow();
    expect(got).toEqual([1]);

    const sent = await read(metricsA);
    expect(sent.value('agent_backend_bus_messages_published_total', { kind: 'message' })).toBe(1);
    expect(sent.value('agent_backend_bus_messages_published_total', { kind: 'request' })).toBe(5);
    expect(sent.value('agent_backend_bus_messages_received_total', { kind: 'reply' })).toBe(2);
    const outcome = (o: string) =>
      sent.value('agent_backend_bus_request_duration_seconds_count', { outcome: o });
    expect(outcome('ok')).toBe(1);
    expect(outcome('remote_error')).toBe(1);
    expect(outcome('no_responder')).toBe(1);
    expect(outcome('aborted')).toBe(1);
    expect(outcome('timeout')).toBe(1);

    const received = await read(metricsB);
    expect(received.value('agent_backend_bus_messages_received_total', { kind: 'message' })).toBe(
      1,
    );
    // echo, fail and the timed-out one: the aborted request was withdrawn before it was sent.
    expect(received.value('agent_backend_bus_messages_received_total', { kind: 'request' })).toBe(
      3,
    );
    expect(received.value('agent_backend_bus_messages_published_total', { kind: 'reply' })).toBe(2);
  });
});

describe('instrumentJobQueue', () => {
  it('counts jobs added and each attempt by queue and outcome', async () => {
    const metrics = createServiceMetrics();
    const jobs: JobQueue = instrumentJobQueue(
      createMemoryJobQueue({ retryBaseDelayMs: 1, onError: () => {} }),
      metrics.jobs,
    );
    open.push(jobs);
    let calls = 0;
    const done = new Promise<void>((resolve) => {
      void jobs.process('work', async (data) => {
        calls++;
        if (data === 'bad') throw new UnrecoverableJobError('bad job');
        if (calls === 1) throw new Error('first attempt fails');
        resolve();
        return 'ok';
      });
    });
    await jobs.add('work', 'good');
    await done;
    await jobs.add('work', 'bad');
    let text = await read(metrics);
    for (let i = 0; i < 100 && text.value('agent_backend_jobs_total') < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      text = await read(metrics);
    }
    expect(text.value('agent_backend_jobs_added_total', { queue: 'work' })).toBe(2);
    expect(text.value('agent_backend_jobs_total', { queue: 'work', outcome: 'completed' })).toBe(1);
    expect(text.value('agent_backend_jobs_total', { queue: 'work', outcome: 'failed' })).toBe(2);
    expect(text.value('agent_backend_job_duration_seconds_count', { queue: 'work' })).toBe(3);
    expect(await jobs.listSchedules('work')).toEqual([]);
  });
});
