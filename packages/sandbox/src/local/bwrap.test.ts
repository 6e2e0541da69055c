import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSandboxContract } from '../sandbox.contract.js';
import { BubblewrapSandboxProvider } from './bwrap-provider.js';
import { bwrapArgs } from './bwrap-args.js';

const hasMatplotlib = (() => {
  try {
    // The sandbox runs the system's python3 (PATH /usr/local/bin:/usr/bin inside).
    execFileSync('/usr/bin/python3', ['-c', 'import matplotlib']);
    return true;
  } catch {
    return false;
  }
})();

const root = mkdtempSync(join(tmpdir(), 'sbx-local-'));
const stateDir = join(root, 'state');
const usersRoot = join(root, 'users');
let n = 0;
const workingDirectory = () => {
  const dir = join(usersRoot, 'alice', `project-${n++}`);
  mkdirSync(dir, { recursive: true });
  return dir;
};
const metadata = { userId: 'alice', sessionId: 'session-1', deployment: 'contract' };

describeSandboxContract('bubblewrap', {
  makeProvider: () => new BubblewrapSandboxProvider({ stateDir }),
  spec: () => ({ metadata, hostWorkingDirectory: workingDirectory() }),
  matplotlib: hasMatplotlib,
});

describe('bubblewrap sandbox: escapes tried', () => {
  const limits = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };
  const provider = new BubblewrapSandboxProvider({
    stateDir,
    limits: { maxFileBytes: 10 * 1024 * 1024, maxProcesses: 64 },
  });
  let server: Server;
  let port: number;
  beforeAll(async () => {
    // Another user's files, next to alice's.
    mkdirSync(join(usersRoot, 'bob'), { recursive: true });
    writeFileSync(join(usersRoot, 'bob', 'secret.txt'), 'bob-secret');
    server = createServer((socket) => socket.end('reached the host\n'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it("sees the host's public certificates but not its private keys folder", async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const look = await sandbox.runCommand(
      'for p in /etc/ssl/private /etc/ssl/certs /etc/ssl/openssl.cnf; do test -e $p && echo "$p there"; done',
      limits,
    );
    expect(look.stdout).not.toContain('/etc/ssl/private');
    if (existsSync('/etc/ssl/certs')) expect(look.stdout).toContain('/etc/ssl/certs there');
    // Also on a host without that folder: no bind mounts /etc/ssl whole.
    const args = bwrapArgs({
      network: false,
      shmBytes: 1024,
      tmp: '/tmp',
      workspaceFd: 3,
      codeDir: '/tmp',
    });
    const sources = args.flatMap((arg, i) => (arg === '--ro-bind' ? [args[i + 1]] : []));
    expect(sources).not.toContain('/etc/ssl');
  });

  it('counts an output image that is a link or a folder as left out, and reads neither', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const result = await sandbox.runCode(
      'python',
      [
        'import os',
        "os.makedirs('/tmp/outputs', exist_ok=True)",
        "os.symlink('/etc/hostname', '/tmp/outputs/a-link.png')",
        "os.mkdir('/tmp/outputs/b-folder.png')",
        "open('/tmp/outputs/c.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\nok')",
      ].join('\n'),
      limits,
    );
    expect(result.exitCode).toBe(0);
    expect(result.images.map((i) => Buffer.from(i.data, 'base64').toString('latin1'))).toEqual([
      '\x89PNG\r\n\x1a\nok',
    ]);
    expect(result.imagesLeftOut).toBe(2);
  });

  it('cannot read /etc/shadow or anything of the host but its working directory', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const shadow = await sandbox.runCommand('cat /etc/shadow', limits);
    expect(shadow.exitCode).not.toBe(0);
    expect(shadow.stdout).toBe('');
    const look = await sandbox.runCode(
      'python',
      `import os\nfor p in ['${usersRoot}', '${join(usersRoot, 'bob', 'secret.txt')}', '/root', '/home', '${stateDir}']:\n    print(p, os.path.exists(p))`,
      limits,
    );
    expect(look.stdout).not.toContain('True');
    expect((await sandbox.runCommand('cat ../bob/secret.txt; ls /', limits)).stdout).not.toContain(
      'bob-secret',
    );
    const env = await sandbox.runCommand('env', limits);
    expect(env.stdout).not.toMatch(/REDIS_URL|DATABASE_URL|JWT|SECRET|KEY/);
    expect((await sandbox.runCommand('id -u', limits)).stdout).toBe('65534\n');
  });

  it('does not follow ../ or a symlink out of the working directory', async () => {
    const host = workingDirectory();
    symlinkSync(join(usersRoot, 'bob'), join(host, 'to-bob'));
    symlinkSync('/etc', join(host, 'to-etc'));
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: host });
    // Through the file tools (the host side): refused.
    await expect(sandbox.readFile('to-bob/secret.txt', 100)).rejects.toMatchObject({
      code: 'path_outside',
    });
    await expect(sandbox.writeFile('to-etc/evil', 'x')).rejects.toMatchObject({
      code: 'path_outside',
    });
    await expect(sandbox.readFile('../../bob/secret.txt', 100)).rejects.toMatchObject({
      code: 'path_outside',
    });
    // Through code (inside): the link points at a path that does not exist in the sandbox.
    const viaCode = await sandbox.runCommand('cat to-bob/secret.txt', limits);
    expect(viaCode.stdout).not.toContain('bob-secret');
    expect(existsSync(join('/etc', 'evil'))).toBe(false);
  });

  it('stops a listing in a folder of links after ten times its limit of entries looked at', async () => {
    const host = workingDirectory();
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: host });
    const made = await sandbox.runCommand(
      'mkdir links && cd links && for i in $(seq 1 2000); do ln -s /etc/passwd l$i; done && touch file',
      limits,
    );
    expect(made.exitCode).toBe(0);
    // Links are never listed, but each one looked at counts: the walk does not go through all.
    const listing = await sandbox.listFiles('links', 1, { limit: 10 });
    expect(listing.cut).toBe(true);
    expect(listing.length).toBeLessThanOrEqual(1);
    const whole = await sandbox.listFiles('links', 1, { limit: 1_000 });
    expect(whole).toEqual([{ path: 'file', type: 'file', size: 0 }]);
    expect(whole.cut).toBeUndefined();
  });

  it('has no network', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const result = await sandbox.runCode(
      'python',
      `import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', ${port}), timeout=2)\n    print('connected', s.recv(100))\nexcept OSError as e:\n    print('refused', e)`,
      limits,
    );
    expect(result.stdout).toMatch(/^refused/);
  });

  it('contains a fork bomb, and the next call works', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const bomb = await sandbox.runCommand(
      'bomb() { bomb | bomb & }; bomb; sleep 2; echo survived',
      {
        ...limits,
        timeoutMs: 5_000,
      },
    );
    expect(bomb.stderr).toMatch(/fork|Resource temporarily unavailable|retry/i);
    const after = await sandbox.runCommand('echo fine', limits);
    expect(after).toMatchObject({ stdout: 'fine\n', exitCode: 0 });
    // The host still forks.
    expect(execFileSync('echo', ['host ok']).toString()).toBe('host ok\n');
  });

  it('stops writing 10 GB at the file-size limit without filling the disk', async () => {
    const host = workingDirectory();
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: host });
    const result = await sandbox.runCommand(
      'head -c 10G /dev/zero > big.bin; echo "exit $?"',
      limits,
    );
    expect(result.stdout).not.toBe('exit 0\n');
    expect(statSync(join(host, 'big.bin')).size).toBeLessThanOrEqual(10 * 1024 * 1024);
  });

  it('kills an infinite loop at the deadline with everything it started', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const marker = `loop-${Date.now()}`;
    const result = await sandbox.runCommand(
      `(exec -a ${marker} sleep 600) & while true; do :; done`,
      { ...limits, timeoutMs: 1_000 },
    );
    expect(result).toMatchObject({ timedOut: true, exitCode: null });
    // Nothing it started lives on (pgrep answers 1 when it finds no process).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(() => execFileSync('pgrep', ['-f', marker])).toThrow();
  });

  it('fails an allocation past the memory limit, and the next call works', async () => {
    const small = new BubblewrapSandboxProvider({
      stateDir,
      limits: { memoryBytes: 64 * 1024 * 1024 },
    });
    const sandbox = await small.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const big = await sandbox.runCode(
      'python',
      'x = bytearray(256 * 1024 * 1024)\nprint("allocated", len(x))',
      limits,
    );
    expect(big.stdout).not.toContain('allocated');
    expect(big.stderr).toContain('MemoryError');
    expect(big.exitCode).not.toBe(0);
    const fits = await sandbox.runCode(
      'python',
      'x = bytearray(8 * 1024 * 1024)\nprint(len(x))',
      limits,
    );
    expect(fits).toMatchObject({ stdout: '8388608\n', exitCode: 0 });
  });

  it('kills a process past its CPU time by a signal, long before the deadline', async () => {
    const brief = new BubblewrapSandboxProvider({ stateDir, limits: { cpuSeconds: 1 } });
    const sandbox = await brief.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const spin = await sandbox.runCommand('echo spinning; while true; do :; done', {
      ...limits,
      timeoutMs: 600_000,
    });
    // Not the deadline (10 min away): the CPU limit ended it, by a signal (128 + its number).
    expect(spin.timedOut).toBe(false);
    expect(spin.stdout).toBe('spinning\n');
    expect(spin.exitCode).toBeGreaterThan(128);
  });

  it('cannot write under /usr or the other read-only system paths', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const result = await sandbox.runCommand(
      'for p in /usr/evil /usr/bin/evil /etc/evil /bin/evil; do touch $p 2>&1 && echo "wrote $p"; done',
      limits,
    );
    expect(result.stdout).not.toContain('wrote');
    expect(result.stdout).toMatch(/Read-only file system|Permission denied/);
    expect(existsSync('/usr/evil')).toBe(false);
    expect(existsSync('/usr/bin/evil')).toBe(false);
  });

  it('sees only its own processes in /proc (PID namespace) and its own hostname (UTS)', async () => {
    const sandbox = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    const procs = await sandbox.runCode(
      'python',
      [
        'import os',
        'for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):',
        '    with open(f"/proc/{pid}/cmdline", "rb") as f:',
        '        print(pid, f.read().split(b"\\0")[0].decode())',
      ].join('\n'),
      limits,
    );
    const lines = procs.stdout.trim().split('\n');
    // bwrap's init as 1, then the call's own processes; nothing of the host (the test runner,
    // the host's init, PostgreSQL) and not this test's PID.
    expect(lines[0]).toBe('1 bwrap');
    expect(lines.length).toBeLessThanOrEqual(4);
    expect(procs.stdout).not.toMatch(/vitest|node|postgres|redis|systemd|init/);
    expect(lines.map((l) => Number(l.split(' ')[0]))).not.toContain(process.pid);
    const name = await sandbox.runCommand('hostname; cat /proc/sys/kernel/hostname', limits);
    expect(name.stdout).toBe('sandbox\nsandbox\n');
    expect(hostname()).not.toBe('sandbox');
  });

  it('reaches a server on the host loopback only with SANDBOX_LOCAL_NETWORK (network: true)', async () => {
    const connect = `import socket\ntry:\n    s = socket.create_connection(('127.0.0.1', ${port}), timeout=5)\n    print('connected', s.recv(100).decode().strip())\nexcept OSError as e:\n    print('refused', e)`;
    const networked = new BubblewrapSandboxProvider({ stateDir, network: true });
    const open = await networked.create({ metadata, hostWorkingDirectory: workingDirectory() });
    expect((await open.runCode('python', connect, limits)).stdout).toBe(
      'connected reached the host\n',
    );
    const closed = await provider.create({ metadata, hostWorkingDirectory: workingDirectory() });
    expect((await closed.runCode('python', connect, limits)).stdout).toMatch(/^refused/);
  });
});
