import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import {
  compiledPgliteWasm,
  compileWithBaselineHints,
  withBaselineHints,
  writeU32,
} from './pglite-wasm.js';

const sized = (bytes: number[]) => [...writeU32(bytes.length), ...bytes];
const name = (text: string) => sized([...new TextEncoder().encode(text)]);
/** A body of `() -> i32` that pushes and drops `padding` constants, then returns `value`. */
const body = (padding: number, value: number) =>
  sized([
    0x00,
    ...Array.from({ length: padding }, () => [0x41, 0x01, 0x1a]).flat(),
    0x41,
    value,
    0x0b,
  ]);

/** (module (func "big" (result i32) ...150 bytes...) (func "small" (result i32) (i32.const 3))) */
const twoFunctions = new Uint8Array([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
  ...[0x01, ...sized([0x01, 0x60, 0x00, 0x01, 0x7f])],
  ...[0x03, ...sized([0x02, 0x00, 0x00])],
  ...[0x07, ...sized([0x02, ...name('big'), 0x00, 0x00, ...name('small'), 0x00, 0x01])],
  ...[0x0a, ...sized([0x02, ...body(50, 7), ...body(0, 3)])],
]);

type Exported = () => number;
type Instance = { exports: { big: Exported; small: Exported } };
const wasm = (globalThis as unknown as { WebAssembly: { Instance: new (m: object) => Instance } })
  .WebAssembly;

/** V8's own view of a function's tier (test-only natives). */
function tierOf(): (fn: Exported) => 'liftoff' | 'turbofan' | 'other' {
  setFlagsFromString('--allow-natives-syntax');
  const native = new Function(
    'f',
    "return %IsTurboFanFunction(f) ? 'turbofan' : %IsLiftoffFunction(f) ? 'liftoff' : 'other'",
  ) as (fn: Exported) => 'liftoff' | 'turbofan' | 'other';
  return native;
}

async function runUntilOptimized(instance: Instance, tier: ReturnType<typeof tierOf>) {
  // With dynamic tiering off, V8 optimizes a function in the background after its first call.
  for (let i = 0; i < 1_000 && tier(instance.exports.small) !== 'turbofan'; i++) {
    instance.exports.big();
    instance.exports.small();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('compileWithBaselineHints', () => {
  it('keeps the functions over the threshold at the baseline tier while the others are optimized', async () => {
    const tier = tierOf();
    const hinted = await compileWithBaselineHints(twoFunctions, 100);
    expect(hinted, 'this V8 reads compilation hints').toBeDefined();
    const instance = new wasm.Instance(hinted!);
    expect([instance.exports.big(), instance.exports.small()]).toEqual([7, 3]);
    await runUntilOptimized(instance, tier);
    expect(tier(instance.exports.small)).toBe('turbofan');
    expect(tier(instance.exports.big)).toBe('liftoff');

    // The same module with nothing over the threshold: the big function is optimized too.
    const plain = new wasm.Instance((await compileWithBaselineHints(twoFunctions, 1e9))!);
    await runUntilOptimized(plain, tier);
    for (let i = 0; i < 1_000 && tier(plain.exports.big) !== 'turbofan'; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    expect(tier(plain.exports.big)).toBe('turbofan');
  });

  it('lists the functions it holds back by their index, imports first', () => {
    expect(withBaselineHints(twoFunctions, 100).baselineOnly).toEqual([0]);
    expect(withBaselineHints(twoFunctions, 1).baselineOnly).toEqual([0, 1]);
  });

  it('refuses a truncated module and one that carries hints already', () => {
    expect(() => withBaselineHints(twoFunctions.subarray(0, twoFunctions.length - 3))).toThrow(
      /malformed/,
    );
    expect(() => withBaselineHints(withBaselineHints(twoFunctions, 100).bytes)).toThrow(
      /already has compilation hints/,
    );
  });
});

describe('compiledPgliteWasm', () => {
  it('compiles pglite.wasm once per process', async () => {
    const first = compiledPgliteWasm();
    expect(compiledPgliteWasm()).toBe(first);
    expect(await first).toBeDefined();
  });
});
