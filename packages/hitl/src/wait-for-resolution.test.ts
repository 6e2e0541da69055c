import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryBus, createMemoryHub, type Bus } from '@agent-backend/bus';
import { createMemoryEphemeralStore } from '@agent-backend/ephemeral';
import { ApprovalStore, resolvedChannel, type ApprovalRecord } from './approval-store.js';
import { waitForResolution } from './wait-for-resolution.js';

const record = (expiresInMs: number): ApprovalRecord => ({
  requestId: `apr_${Math.random().toString(36).slice(2)}`,
  userId: 'u1',
  sessionId: 's1',
  runId: 'r1',
  toolCallId: 'call_1',
  toolName: 'send',
  args: { to: 'a' },
  allowedDecisions: ['approve', 'reject'],
  parameters: { type: 'object' },
  expiresAt: Date.now() + expiresInMs,
});

describe('waitForResolution', () => {
  const buses: Bus[] = [];
  afterEach(async () => {
    await Promise.all(buses.splice(0).map((b) => b.close()));
  });
  const setup = () => {
    const hub = createMemoryHub();
    const a = createMemoryBus({ hub });
    const b = createMemoryBus({ hub });
    buses.push(a, b);
    return { store: new ApprovalStore(createMemoryEphemeralStore()), waiter: a, decider: b };
  };

  it('wakes on the bus message of another node', async () => {
    const { store, waiter, decider } = setup();
    const r = record(60_000);
    await store.create(r);
    const waiting = waitForResolution(store, waiter, r, new AbortController().signal, 60_000);
    await new Promise((res) => setTimeout(res, 20));
    await store.resolve(r, { outcome: 'approved' });
    await decider.publish(resolvedChannel(r.requestId), 1);
    await expect(waiting).resolves.toEqual({ outcome: 'approved' });
  });

  it('finds a decision whose bus message was lost by re-reading the store', async () => {
    const { store, waiter } = setup();
    const r = record(60_000);
    await store.create(r);
    const waiting = waitForResolution(store, waiter, r, new AbortController().signal, 30);
    await store.resolve(r, { outcome: 'rejected', message: 'no' });
    await expect(waiting).resolves.toEqual({ outcome: 'rejected', message: 'no' });
  });

  it('times out once, after which a decision cannot be written', async () => {
    const { store, waiter } = setup();
    const r = record(50);
    await store.create(r);
    await expect(
      waitForResolution(store, waiter, r, new AbortController().signal, 1_000),
    ).resolves.toEqual({ outcome: 'timed_out' });
    expect(await store.resolve(r, { outcome: 'approved' })).toBe(false);
    expect(await store.resolution(r.requestId)).toEqual({ outcome: 'timed_out' });
  });

  it('returns a decision written before the timeout fired instead of timing out', async () => {
    const { store, waiter } = setup();
    const r = record(0);
    await store.create(r);
    await store.resolve(r, { outcome: 'approved' });
    await expect(
      waitForResolution(store, waiter, r, new AbortController().signal, 1_000),
    ).resolves.toEqual({ outcome: 'approved' });
  });

  it('stops waiting as cancelled when the run is aborted', async () => {
    const { store, waiter } = setup();
    const r = record(60_000);
    await store.create(r);
    const controller = new AbortController();
    const waiting = waitForResolution(store, waiter, r, controller.signal, 60_000);
    setTimeout(() => controller.abort(), 20);
    await expect(waiting).resolves.toEqual({ outcome: 'cancelled' });
  });
});
