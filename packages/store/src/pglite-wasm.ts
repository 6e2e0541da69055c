import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setFlagsFromString } from 'node:v8';

/**
 * PostgreSQL's WebAssembly, compiled so that its start does not need a gigabyte.
 *
 * V8 runs a new WebAssembly module with its baseline compiler (Liftoff) and, by default,
 * recompiles every function that gets hot with its optimizing compiler (dynamic tiering). Four
 * functions of `pglite.wasm` are each about 100 KB of code (the SQL parser `raw_parser`,
 * `standard_ProcessUtility`, `outNode`, `nodeRead`), and optimizing one of them takes about
 * 600 MB of compiler memory for a few seconds: the embedded service peaked at ~900 MB resident
 * right after start. V8 has no flag to leave one function out, but it reads per-function tiers
 * from a `compilationHints` custom section (`--experimental-wasm-compilation-hints`) when dynamic
 * tiering is off. So this module adds that section, giving every function of at least
 * {@link LARGE_FUNCTION_BYTES} the baseline tier as its top tier, and compiles the module once
 * per process with hints read, dynamic tiering off and one background compilation at a time. Every other function is optimized in the background after
 * its first call instead of when it gets hot. docs/BENCHMARKS.md ("Footprint") has the figures.
 *
 * The flags are V8's and process-wide, and they must stay set while the module runs: V8 reads
 * them again when it compiles a function lazily. They change nothing else of ours (the only
 * other WebAssembly in the process is undici's small HTTP parser).
 */

/** Functions this large (bytes of WebAssembly body) are never optimized. */
export const LARGE_FUNCTION_BYTES = 64 * 1024;

const HINTS_SECTION = 'compilationHints';
// One byte per declared function: strategy (bits 0-1), baseline tier (2-3), top tier (4-5);
// tier 1 is Liftoff. 0 leaves the function to V8's defaults.
const BASELINE_ONLY = (1 << 4) | (1 << 2);
const SECTION_FUNCTION = 3;
const SECTION_IMPORT = 2;
const SECTION_CODE = 10;

interface Section {
  readonly id: number;
  readonly body: number;
  readonly end: number;
}

function readU32(bytes: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let shift = 0;
  let byte: number;
  let pos = at;
  do {
    if (pos >= bytes.length || shift > 28) throw new Error('malformed WebAssembly module');
    byte = bytes[pos++]!;
    value |= (byte & 0x7f) << shift;
    shift += 7;
  } while (byte & 0x80);
  return [value >>> 0, pos];
}

/** `value` as unsigned LEB128, WebAssembly's encoding of sizes and counts. */
export function writeU32(value: number): number[] {
  const out: number[] = [];
  let rest = value >>> 0;
  do {
    let byte = rest & 0x7f;
    rest >>>= 7;
    if (rest) byte |= 0x80;
    out.push(byte);
  } while (rest);
  return out;
}

function sections(bytes: Uint8Array): Section[] {
  const out: Section[] = [];
  let pos = 8; // magic and version
  while (pos < bytes.length) {
    const id = bytes[pos]!;
    const [size, body] = readU32(bytes, pos + 1);
    out.push({ id, body, end: body + size });
    pos = body + size;
  }
  if (pos !== bytes.length) throw new Error('malformed WebAssembly module');
  return out;
}

function skipName(bytes: Uint8Array, at: number): number {
  const [length, next] = readU32(bytes, at);
  return next + length;
}

function skipLimits(bytes: Uint8Array, at: number): number {
  const flags = bytes[at]!;
  let [, pos] = readU32(bytes, at + 1);
  if (flags & 1) [, pos] = readU32(bytes, pos);
  return pos;
}

/** How many functions the module imports: they come before its own in the index space. */
function importedFunctions(bytes: Uint8Array, section: Section | undefined): number {
  if (!section) return 0;
  let [count, pos] = readU32(bytes, section.body);
  let functions = 0;
  while (count-- > 0) {
    pos = skipName(bytes, skipName(bytes, pos));
    const kind = bytes[pos++];
    if (kind === 0) {
      functions++;
      [, pos] = readU32(bytes, pos);
    } else if (kind === 1)
      pos = skipLimits(bytes, pos + 1); // table: element type, limits
    else if (kind === 2)
      pos = skipLimits(bytes, pos); // memory
    else if (kind === 3)
      pos += 2; // global: value type, mutability
    else if (kind === 4)
      [, pos] = readU32(bytes, pos + 1); // tag: attribute, type
    else throw new Error(`unknown import kind ${String(kind)}`);
  }
  return functions;
}

/** The body size of each function the module defines, in order. */
function bodySizes(bytes: Uint8Array, code: Section): number[] {
  let [count, pos] = readU32(bytes, code.body);
  const sizes: number[] = [];
  while (count-- > 0) {
    const [size, body] = readU32(bytes, pos);
    sizes.push(size);
    pos = body + size;
  }
  return sizes;
}

export interface HintedModule {
  readonly bytes: Uint8Array;
  /** Indices (in the module's function index space, imports first) kept at the baseline tier. */
  readonly baselineOnly: readonly number[];
}

/**
 * The module with a `compilationHints` section placed after its function section (where V8
 * reads it) that keeps every function of at least `threshold` bytes at the baseline tier.
 */
export function withBaselineHints(
  module: Uint8Array,
  threshold = LARGE_FUNCTION_BYTES,
): HintedModule {
  const all = sections(module);
  const functions = all.find((s) => s.id === SECTION_FUNCTION);
  const code = all.find((s) => s.id === SECTION_CODE);
  if (!functions || !code) throw new Error('WebAssembly module without functions');
  if (all.some((s) => s.id === 0 && sectionName(module, s) === HINTS_SECTION)) {
    throw new Error('WebAssembly module already has compilation hints');
  }
  const imported = importedFunctions(
    module,
    all.find((s) => s.id === SECTION_IMPORT),
  );
  const sizes = bodySizes(module, code);
  const hints = new Uint8Array(sizes.length);
  const baselineOnly: number[] = [];
  sizes.forEach((size, i) => {
    if (size < threshold) return;
    hints[i] = BASELINE_ONLY;
    baselineOnly.push(imported + i);
  });
  const name = new TextEncoder().encode(HINTS_SECTION);
  const payload = [...writeU32(name.length), ...name, ...writeU32(sizes.length)];
  const header = [0, ...writeU32(payload.length + hints.length), ...payload];
  const bytes = new Uint8Array(module.length + header.length + hints.length);
  bytes.set(module.subarray(0, functions.end), 0);
  bytes.set(header, functions.end);
  bytes.set(hints, functions.end + header.length);
  bytes.set(module.subarray(functions.end), functions.end + header.length + hints.length);
  return { bytes, baselineOnly };
}

function sectionName(bytes: Uint8Array, section: Section): string {
  const [length, at] = readU32(bytes, section.body);
  return new TextDecoder().decode(bytes.subarray(at, at + length));
}

/**
 * Whether this V8 honours the hints: with the flag set, a module whose hint would lower a
 * function's tier is refused. A V8 that dropped the feature compiles it, and then the hints
 * are not used at all (PGlite compiles its module as before).
 */
function hintsHonoured(): boolean {
  // (module (func)) with a hint of baseline tier 2 and top tier 1: a forbidden downgrade.
  // prettier-ignore
  const probe = new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type section: () -> ()
    0x03, 0x02, 0x01, 0x00, // function section: one function of type 0
    0x00, 0x13, 0x10, ...new TextEncoder().encode(HINTS_SECTION), 0x01, (1 << 4) | (2 << 2),
    0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // code section: an empty body
  ]);
  const compiles = () => {
    try {
      new wasm.Module(probe);
      return true;
    } catch {
      return false;
    }
  };
  // Valid without the hints read, refused with them: anything else means they are not read.
  setFlagsFromString('--no-experimental-wasm-compilation-hints');
  if (!compiles()) return false;
  setFlagsFromString('--experimental-wasm-compilation-hints');
  return !compiles();
}

/** A compiled WebAssembly module (the project's TypeScript libraries hold no WebAssembly types). */
export type WasmModule = object;

const wasm = (
  globalThis as unknown as {
    WebAssembly: {
      Module: new (bytes: Uint8Array) => WasmModule;
      compile(bytes: Uint8Array): Promise<WasmModule>;
    };
  }
).WebAssembly;

/**
 * Compiles `module` with every function of at least `threshold` bytes held at the baseline tier,
 * turning on what that takes (above); `undefined` where this V8 does not read the hints.
 */
export function compileWithBaselineHints(
  module: Uint8Array,
  threshold = LARGE_FUNCTION_BYTES,
): Promise<WasmModule> | undefined {
  const { bytes } = withBaselineHints(module, threshold);
  if (!hintsHonoured()) {
    setFlagsFromString('--no-experimental-wasm-compilation-hints');
    return undefined;
  }
  setFlagsFromString('--no-wasm-dynamic-tiering');
  // One background compilation at a time: each optimized function holds tens of megabytes of
  // compiler memory while it compiles, and several at once added ~100 MB to the peak.
  setFlagsFromString('--wasm-num-compilation-tasks=1');
  return wasm.compile(bytes);
}

let compiled: Promise<WasmModule | undefined> | undefined;

/**
 * `pglite.wasm` compiled with its largest functions held at the baseline tier, once per process
 * (every PGlite of the process instantiates the same module); `undefined` where this V8 does not
 * support the hints or the file cannot be read (PGlite then compiles its own, as before).
 */
export function compiledPgliteWasm(): Promise<WasmModule | undefined> {
  compiled ??= (async () => {
    let original: Uint8Array;
    try {
      const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
      original = await readFile(join(dirname(entry), 'pglite.wasm'));
      return await compileWithBaselineHints(original);
    } catch {
      return undefined; // an install layout or a PGlite build we cannot read: its own compile
    }
  })();
  return compiled;
}
