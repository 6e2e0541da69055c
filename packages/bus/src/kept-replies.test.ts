import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeptReplies } from './kept-replies.js';

describe('KeptReplies', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('gives a reply back within its time, not after', () => {
    const kept = new KeptReplies(5_000, 1_000);
    kept.keep('a:1', 'one');
    vi.advanceTimersByTime(4_999);
    expect(kept.get('a:1')).toBe('one');
    vi.advanceTimersByTime(2);
    expect(kept.get('a:1')).toBeUndefined();
  });

  it('forgets expired replies by itself when no other reply follows', () => {
    const kept = new KeptReplies(5_000, 1_000);
    kept.keep('a:1', 'one');
    vi.advanceTimersByTime(3_000);
    kept.keep('a:2', 'two');
    vi.advanceTimersByTime(2_001);
    expect(kept.size).toBe(1);
    vi.advanceTimersByTime(3_000);
    expect(kept.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('forgets the oldest first past its size', () => {
    const kept = new KeptReplies(5_000, 10);
    kept.keep('a:1', '1234');
    kept.keep('a:2', '5678');
    kept.keep('a:3', '9012');
    expect([kept.get('a:1'), kept.get('a:2'), kept.get('a:3')]).toEqual([
      undefined,
      '5678',
      '9012',
    ]);
  });

  it('holds nothing after clear', () => {
    const kept = new KeptReplies(5_000, 1_000);
    kept.keep('a:1', 'one');
    kept.clear();
    expect(kept.get('a:1')).toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });
});
