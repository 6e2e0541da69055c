import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeDocker, type FakeDocker } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSandboxContract } from '../sandbox.contract.js';
import { DockerSandboxProvider, type DockerOptions } from './docker-provider.js';

// The Docker runtime of local sandboxes against a fake Docker engine on a unix socket that speaks
// the Engine API (these machines have no Docker engine); the fake runs each exec in bubblewrap.
const hasMatplotlib = (() => {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import matplotlib']);
    return true;
  } catch {
    return false;
  }
})();

const root = mkdtempSync(join(tmpdir(), 'sbx-docker-'));
const stateDir = join(root, 'state');
let n = 0;
const workingDirectory = () => {
  const dir = join(root, 'users', 'alice', `project-${n++}`);
  mkdirSync(dir, { recursive: true });
  return dir;
};
const metadata = { userId: 'alice', sessionId: 'session-1', deployment: 'contract-docker' };
let docker: FakeDocker;
const options = (): DockerOptions => ({ stateDir, host: docker.host, image: 'sandbox:test' });
beforeAll(async () => {
  docker = await startFakeDocker();
});
afterAll(async () => {
  await docker?.close();
});

describeSandboxContract('docker', {
  makeProvider: () => new DockerSandboxProvider(options()),
  spec: () => ({ metadata, hostWorkingDirectory: workingDirectory() }),
  matplotlib: hasMatplotlib,
});

describe('Docker runtime', () => {
  const limits = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };

  it('asks for an isolated container: read-only root, no network, no capabilities, limits, labels', async () => {
    const provider = new DockerSandboxProvider({
      ...options(),
      limits: { memoryBytes: 256 * 1024 ** 2, maxProcesses: 64 },
    });
    const dir = workingDirectory();
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: dir });
    const container = docker.containers.get(sandbox.id)!;
    expect(container.running).toBe(true);
    expect(container.config).toMatchObject({
      Image: 'sandbox:test',
      Cmd: ['sleep', 'infinity'],
      NetworkDisabled: true,
      Labels: {
        'agent-backend.user': 'alice',
        'agent-backend.session': 'session-1',
        'agent-backend.deployment': 'contract-docker',
      },
      HostConfig: {
        Binds: [`${dir}:/workspace:rw`, `${join(stateDir, sandbox.id, 'tmp')}:/tmp:rw`],
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Init: true,
        Memory: 256 * 1024 ** 2,
        PidsLimit: 64,
        NanoCpus: 1e9,
      },
    });
    await provider.destroy(sandbox.id);
    expect(docker.containers.has(sandbox.id)).toBe(false);
    expect(existsSync(join(stateDir, sandbox.id))).toBe(false);
    expect(existsSync(dir)).toBe(true);
  });

  it('kills the whole process group of a call at its deadline, in the container', async () => {
    const provider = new DockerSandboxProvider(options());
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const result = await sandbox.runCommand('sleep 30 & sleep 30; echo late', {
      ...limits,
      timeoutMs: 800,
    });
    expect(result).toMatchObject({ timedOut: true, exitCode: null, stdout: '' });
    // Killed by the second exec, not the in-container backstop (2 s later).
    await expect.poll(() => docker.running(sandbox.id), { timeout: 1_500 }).toBe(0);
    await provider.destroy(sandbox.id);
  });

  it('stops the container when paused and starts it again for the next call', async () => {
    const provider = new DockerSandboxProvider(options());
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    await provider.pause(sandbox.id);
    expect(docker.containers.get(sandbox.id)!.running).toBe(false);
    // A handle held across the pause (a run in progress) still works: the call starts it.
    expect((await sandbox.runCommand('echo awake', limits)).stdout).toBe('awake\n');
    expect(docker.containers.get(sandbox.id)!.running).toBe(true);
    await provider.destroy(sandbox.id);
  });

  it('mounts another working directory on reconnect, keeping its own /tmp', async () => {
    const provider = new DockerSandboxProvider(options());
    const first = workingDirectory();
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: first });
    await sandbox.runCommand('echo kept > /tmp/state.txt && echo one > here.txt', limits);
    const second = workingDirectory();
    writeFileSync(join(second, 'other.txt'), 'two\n');
    const again = await provider.connect(sandbox.id, { metadata, hostWorkingDirectory: second });
    const read = await again!.runCommand('cat /tmp/state.txt other.txt', limits);
    expect(read.stdout).toBe('kept\ntwo\n');
    expect(readFileSync(join(first, 'here.txt'), 'utf8')).toBe('one\n');
    await provider.destroy(sandbox.id);
  });
});
