import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeDocker, type FakeDocker } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSandboxContract } from '../sandbox.contract.js';
import { DockerSandboxProvider, IDLE_WATCHDOG, type DockerOptions } from './docker-provider.js';

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
      // The idle watchdog (10 min by default), on the sandbox's code directory.
      Cmd: ['/bin/bash', '-c', IDLE_WATCHDOG, '600', '/opt/code'],
      NetworkDisabled: true,
      Labels: {
        'agent-backend.user': 'alice',
        'agent-backend.session': 'session-1',
        'agent-backend.deployment': 'contract-docker',
      },
      HostConfig: {
        // The code files come from the service's own directory, read-only inside.
        Mounts: [
          { Type: 'bind', Source: dir, Target: '/workspace', ReadOnly: false },
          {
            Type: 'bind',
            Source: join(stateDir, sandbox.id, 'tmp'),
            Target: '/tmp',
            ReadOnly: false,
          },
          {
            Type: 'bind',
            Source: join(stateDir, sandbox.id, 'code'),
            Target: '/opt/code',
            ReadOnly: true,
          },
        ],
        NetworkMode: 'none',
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Init: true,
        Memory: 256 * 1024 ** 2,
        ShmSize: 64 * 1024 ** 2,
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

  it('reconnects to a container an earlier version made with `Binds`', async () => {
    const provider = new DockerSandboxProvider(options());
    const dir = workingDirectory();
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: dir });
    await provider.pause(sandbox.id);
    // As versions before `Mounts` made it: the same binds as `<host>:<inside>:<mode>`.
    const { HostConfig } = docker.containers.get(sandbox.id)!.config;
    HostConfig.Binds = HostConfig.Mounts!.map(
      (m) => `${m.Source}:${m.Target}:${m.ReadOnly ? 'ro' : 'rw'}`,
    );
    delete HostConfig.Mounts;
    const again = await provider.connect(sandbox.id);
    expect((await again!.runCommand('echo same > here.txt && cat here.txt', limits)).stdout).toBe(
      'same\n',
    );
    expect(readFileSync(join(dir, 'here.txt'), 'utf8')).toBe('same\n');
    await provider.destroy(sandbox.id);
  });

  it('kills what a call left running (nohup, setsid) when the call ends, and only that', async () => {
    const provider = new DockerSandboxProvider(options());
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const left = `left-${Date.now()}`;
    // Another call's process, still running: not this call's, so it stays.
    const other = sandbox.runCommand(`exec -a ${left}-other sleep 15`, {
      ...limits,
      timeoutMs: 60_000,
    });
    await expect.poll(() => docker.running(sandbox.id)).toBe(1);
    const result = await sandbox.runCommand(
      `nohup bash -c 'exec -a ${left}-nohup sleep 600' > /dev/null 2>&1 &\n` +
        `setsid bash -c 'exec -a ${left}-setsid sleep 600' > /dev/null 2>&1 < /dev/null &\n` +
        'echo started',
      limits,
    );
    expect(result).toMatchObject({ stdout: 'started\n', exitCode: 0 });
    // pgrep answers 1 when it finds no process.
    expect(() => execFileSync('pgrep', ['-f', `${left}-nohup`])).toThrow();
    expect(() => execFileSync('pgrep', ['-f', `${left}-setsid`])).toThrow();
    expect(execFileSync('pgrep', ['-f', `${left}-other`]).toString()).toMatch(/^\d+/);
    expect(await other).toMatchObject({ exitCode: 0, timedOut: false });
    await provider.destroy(sandbox.id);
  }, 60_000);
});

describe("Docker runtime: the idle watchdog (the container's main process)", () => {
  it('exits once the run directory is idle past the bound, never while a call is active', async () => {
    const dir = join(root, `watchdog-${n++}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'call.active'), '');
    const watchdog = spawn('/bin/bash', ['-c', IDLE_WATCHDOG, '1', dir], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => watchdog.once('exit', resolve));
    try {
      // Several of its 1 s checks with a call active and the directory idle past the bound.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(watchdog.exitCode).toBeNull();
      rmSync(join(dir, 'call.active'));
      expect(await exited).toBe(0);
    } finally {
      watchdog.kill('SIGKILL');
    }
  });
});
