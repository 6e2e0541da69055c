import { describe, expect, it } from 'vitest';
import { FrameRate } from './frame-rate.js';

describe('FrameRate', () => {
  const clocked = (framesPerSecond: number, bytesPerSecond: number, maxFrameBytes = 100) => {
    let now = 0;
    const rate = new FrameRate({ framesPerSecond, bytesPerSecond, maxFrameBytes, now: () => now });
    return { rate, advance: (ms: number) => (now += ms) };
  };

  it("allows a second's burst of frames, then one frame per refill", () => {
    const { rate, advance } = clocked(5, 0);
    const burst = Array.from({ length: 7 }, () => rate.take(10));
    expect(burst).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'refused', 'refused']);
    advance(200);
    expect(rate.take(10)).toBe('ok');
    expect(rate.take(10)).toBe('refused');
  });

  it('counts bytes apart from frames, holding at least one largest frame', () => {
    const { rate, advance } = clocked(0, 50, 100);
    expect(rate.take(100)).toBe('ok');
    expect(rate.take(1)).toBe('refused');
    advance(1_000);
    expect(rate.take(50)).toBe('ok');
  });

  it('calls a flood abuse, but not a client at twice the rate', () => {
    const steady = clocked(10, 0);
    const verdicts = [];
    for (let i = 0; i < 400; i++) {
      steady.advance(50); // 20 a second
      verdicts.push(steady.rate.take(1));
    }
    expect(verdicts).not.toContain('abuse');
    expect(verdicts.filter((v) => v === 'refused').length).toBeGreaterThan(150);

    const flood = clocked(10, 0);
    const flooded = Array.from({ length: 100 }, () => flood.rate.take(1));
    expect(flooded.slice(0, 10).every((v) => v === 'ok')).toBe(true);
    expect(flooded.indexOf('abuse')).toBe(10 + 20);
  });
});
