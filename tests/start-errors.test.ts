/**
 * A start that fails for a reason a person can fix (the port or the data directory
 * held by another process) ends with one line saying so and exit code 1, not a stack trace.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEntry, startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';

/** The non-empty lines of a stream. */
function lines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '');
}

describe('all-in-one start errors', () => {
  const dataDir = tempDir('start-errors');
  let service: ServiceProcess;
  let holder: Server;
  let heldPort: number;

  beforeAll(async () => {
    requireBuild(MAIN);
    service = await startServiceProcess({ entry: MAIN, env: { DATA_DIR: dataDir } });
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    heldPort = (holder.address() as { port: number }).port;
  }, 120_000);
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await new Promise((resolve) => holder?.close(resolve));
  });

  it('a data directory in use by another process: one line naming it and the process', async () => {
    const result = await runEntry(MAIN, [], { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' });
    expect(result.code).toBe(1);
    expect(lines(result.stderr)).toEqual([
      `all-in-one: data directory ${join(dataDir, 'pglite')} is in use by process ${service.child.pid} ` +
        '(another all-in-one or token:issue?); stop it, or set DATA_DIR to another directory',
    ]);
    // The running service is untouched.
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  });

  it('a port in use: one line naming the port, and the data directory is released', async () => {
    const other = tempDir('start-errors-port');
    const result = await runEntry(MAIN, [], {
      DATA_DIR: other,
      PORT: String(heldPort),
      HOST: '127.0.0.1',
    });
    expect(result.code).toBe(1);
    expect(lines(result.stderr)).toEqual([
      `all-in-one: port ${heldPort} is already in use (listening on 127.0.0.1:${heldPort}); ` +
        'stop the process that holds it, or set PORT to another port',
    ]);
    expect(result.stdout).not.toMatch(/\n\s+at /);
    // What it had opened was closed: the next start may take the directory.
    expect(existsSync(join(other, 'pglite', 'pglite.pid'))).toBe(false);
  }, 120_000);
});
