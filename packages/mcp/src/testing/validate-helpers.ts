import { spawn as nodeSpawn } from 'node:child_process';
import { expect } from 'vitest';
import { createUrlGuard } from '@agent-backend/url-guard';
import type { McpPolicy } from '../connect.js';
import { McpConnectError } from '../errors.js';
import { StdioPolicy } from '../stdio-policy.js';
import type { SpawnFn } from '../stdio-transport.js';
import { FIXTURE_STDIO_ENTRY } from './stdio-command.js';

/** What the validation tests over HTTP and over stdio share. */

/** A spawn that counts calls, so a refusal can be shown to have started nothing. */
export function countingSpawn(): SpawnFn & { calls: number } {
  const fn = ((command, args, options) => {
    fn.calls++;
    return nodeSpawn(command, args, options);
  }) as SpawnFn & { calls: number };
  fn.calls = 0;
  return fn;
}

/** A development policy: private networks allowed, the fixture's stdio command allowlisted. */
export const dev = (spawn?: SpawnFn): McpPolicy => ({
  urlGuard: createUrlGuard({ allowPrivateNetworks: true }),
  stdio: new StdioPolicy([FIXTURE_STDIO_ENTRY]),
  spawn,
});

/** The error a validation that must fail fails with. */
export async function failure(promise: Promise<unknown>): Promise<McpConnectError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(McpConnectError);
    return error as McpConnectError;
  }
  throw new Error('expected the validation to fail');
}
