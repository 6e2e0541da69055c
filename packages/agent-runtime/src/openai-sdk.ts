import type * as Sdk from 'openai';

/**
 * The openai package, loaded at the first model client or by {@link preloadOpenai}: a process
 * that never runs an agent (the gateway) never loads it (docs/BENCHMARKS.md, "Footprint").
 */
export type OpenaiSdk = typeof Sdk;

let sdk: OpenaiSdk | undefined;

/** Loads the SDK once; later calls return the same module. */
export async function loadOpenai(): Promise<OpenaiSdk> {
  return (sdk ??= await import('openai'));
}

/**
 * The SDK if a client was made, else undefined: an error of the SDK's classes can only exist
 * once it is loaded, so error mapping needs no load of its own.
 */
export function loadedOpenai(): OpenaiSdk | undefined {
  return sdk;
}

/**
 * Starts loading the SDK in the background, after the current start-up work: a process that runs
 * agents (api, worker, all-in-one) then does not make its first run wait for the import (100 ms
 * or more on a loaded machine). A failure is left to the first model call, which reports it.
 */
export function preloadOpenai(): void {
  setImmediate(() => {
    loadOpenai().catch(() => undefined);
  }).unref();
}
