import type * as E2bModule from 'e2b';
import { SandboxError } from '../sandbox.js';

type E2bSdk = typeof E2bModule;
const importSdk = (): Promise<E2bSdk> => import('e2b');
let sdk: E2bSdk | undefined;
let loading: Promise<E2bSdk> | undefined;

/**
 * The E2B SDK, imported on first use: it and its RPC stack take about a third of a second to
 * load, which every api and worker start would pay in a deployment without cloud sandboxes.
 */
export async function e2b(): Promise<E2bSdk> {
  return (sdk ??= await (loading ??= importSdk()));
}

/** Whether `error` is the SDK's error class `name` (never before the SDK was loaded). */
export function isE2bError(
  error: unknown,
  name: 'NotFoundError' | 'SandboxNotFoundError' | 'CommandExitError',
): boolean {
  return sdk !== undefined && error instanceof sdk[name];
}

export function toArrayBuffer(data: Uint8Array): ArrayBuffer {
  return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
}

export async function providerCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw providerError(what, error);
  }
}

/** E2B's errors as the port's: a sandbox that is gone is `unavailable`, the rest `provider_error`. */
export function providerError(what: string, error: unknown): SandboxError {
  if (error instanceof SandboxError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const code = isE2bError(error, 'SandboxNotFoundError') ? 'unavailable' : 'provider_error';
  return new SandboxError(code, `E2B: could not ${what}: ${message}`, { cause: error });
}
