import type * as Sdk from 'openai';

/**
 * The openai package, loaded at the first model client: a role that never calls a model (the
 * gateway, an api that only serves data) never loads it (docs/BENCHMARKS.md, "Footprint").
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
