import { describe, expect, it } from 'vitest';
import { HeartbeatMessage, heartbeatOf } from './ws-messages.js';

/** The hand check of a heartbeat agrees with the schema, and leaves the rest to it. */
describe('heartbeatOf', () => {
  it.each<[string, Record<string, unknown>]>([
    ['a full heartbeat', { type: 'heartbeat', status: 'busy', current_tasks: 2 }],
    ['defaults', { type: 'heartbeat' }],
    ['an unknown key', { type: 'heartbeat', status: 'offline', extra: 1 }],
    ['a bad status', { type: 'heartbeat', status: 'away' }],
    ['a null status', { type: 'heartbeat', status: null }],
    ['negative tasks', { type: 'heartbeat', current_tasks: -1 }],
    ['fractional tasks', { type: 'heartbeat', current_tasks: 1.5 }],
    ['string tasks', { type: 'heartbeat', current_tasks: '1' }],
    ['another type', { type: 'ping' }],
  ])('%s: the same as the schema', (_, frame) => {
    const parsed = HeartbeatMessage.safeParse(frame);
    const fast = heartbeatOf(frame);
    if (fast) expect(fast).toEqual(parsed.success ? parsed.data : 'refused by the schema');
    else expect(parsed.success).toBe(false);
  });
});
