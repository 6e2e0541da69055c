import { describe, expect, it } from 'vitest';
import { decodeEnvelope } from './envelope.js';
import { createMemoryBus, createMemoryHub } from './memory-bus.js';
import type { BusMessageMeta } from './bus.js';

const req = { kind: 'req', name: 'tools' } as const;
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('the trace context of a request envelope', () => {
  it('is optional: a request without it (an older sender) stays valid', () => {
    const payload = JSON.stringify({ v: 1, k: 'req', from: 'a', id: '1', body: { x: 1 } });
    expect(decodeEnvelope(req, payload)).toEqual({
      v: 1,
      k: 'req',
      from: 'a',
      id: '1',
      body: { x: 1 },
    });
  });

  it('is kept when it is strings, dropped (not the message) when it is not', () => {
    const good = { v: 1, k: 'req', from: 'a', id: '1', tc: { traceparent: TRACEPARENT } };
    expect(decodeEnvelope(req, JSON.stringify(good))).toEqual(good);
    for (const tc of [42, 'x', [TRACEPARENT], { traceparent: 1 }, null]) {
      const decoded = decodeEnvelope(req, JSON.stringify({ ...good, tc }));
      expect(decoded).toEqual({ v: 1, k: 'req', from: 'a', id: '1' });
    }
  });

  it('reaches the responder on another node as meta.trace', async () => {
    const hub = createMemoryHub();
    const [caller, responder] = [createMemoryBus({ hub }), createMemoryBus({ hub })];
    const metas: BusMessageMeta[] = [];
    await responder.respond('tools', (_message, meta) => {
      metas.push(meta);
      return 'ok';
    });
    await caller.request('tools', {}, { timeoutMs: 1_000, trace: { traceparent: TRACEPARENT } });
    await caller.request('tools', {}, { timeoutMs: 1_000 });
    expect(metas.map((m) => m.trace)).toEqual([{ traceparent: TRACEPARENT }, undefined]);
    await Promise.all([caller.close(), responder.close()]);
  });
});

describe('asking again for replies', () => {
  it('a request says `ag: 1` or nothing; any other value is dropped, not the message', () => {
    const good = { v: 1, k: 'req', from: 'a', id: '1', ag: 1 };
    expect(decodeEnvelope(req, JSON.stringify(good))).toEqual(good);
    for (const ag of [true, 2, '1', null]) {
      const decoded = decodeEnvelope(req, JSON.stringify({ ...good, ag }));
      expect(decoded).toEqual({ v: 1, k: 'req', from: 'a', id: '1' });
    }
  });

  it('an `again` envelope travels on a request topic only, with string ids', () => {
    const again = { v: 1, k: 'again', from: 'a', ids: ['1', '2'] };
    expect(decodeEnvelope(req, JSON.stringify(again))).toEqual(again);
    const inbox = { kind: 'inbox', name: 'a' } as const;
    expect(decodeEnvelope(inbox, JSON.stringify(again))).toBe('kind again not allowed');
    for (const ids of [undefined, '1', [1], [null]]) {
      expect(decodeEnvelope(req, JSON.stringify({ ...again, ids }))).toBe('ids not strings');
    }
  });
});
