import type * as Sdk from 'openai';

/**
 * The openai package, loaded at the first model client or by {@link preloadOpenai}: a process
 * that runs no model call never loads it (docs/BENCHMARKS.md, "Footprint").
 */
export type OpenaiSdk = typeof Sdk;

let sdk: OpenaiSdk | undefined;
let loading: Promise<OpenaiSdk> | undefined;

/** Loads the SDK once; later calls return the same module (a failed load is tried again). */
export async function loadOpenai(): Promise<OpenaiSdk> {
  loading ??= import('openai').then(
    (loaded) => (sdk = loaded),
    (error: unknown) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

/**
 * The SDK if a client was made, else undefined: an error of the SDK's classes can only exist
 * once it is loaded, so error mapping needs no load of its own.
 */
export function loadedOpenai(): OpenaiSdk | undefined {
  return sdk;
}

/**
 * Starts loading the SDK in the background, after the current work, unless it is loaded or
 * loading: for a process about to run agents, so that its first run does not wait for the import
 * (100-150 ms on a machine at load 3). Not done at start: the SDK and the `fetch` it brings cost
 * an idle api or worker 6-8 MB resident. A failure is left to the first model call, which
 * reports it.
 */
export function preloadOpenai(): void {
  if (loading) return;
  setImmediate(() => {
    loadOpenai().catch(() => undefined);
  }).unref();
}
