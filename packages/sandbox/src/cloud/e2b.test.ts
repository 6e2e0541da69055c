import { execFileSync } from 'node:child_process';
import { appendFile } from 'node:fs/promises';
import { startFakeE2B, type FakeE2B } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSandboxContract } from '../sandbox.contract.js';
import { SandboxError } from '../sandbox.js';
import { E2BSandboxProvider, type E2BOptions } from './e2b-provider.js';

// The real `e2b` SDK against a fake of E2B's control API and envd on loopback (wire level:
// REST + Connect RPC), so what is tested is what the SDK sends.
const hasMatplotlib = (() => {
  try {
    execFileSync('/usr/bin/python3', ['-c', 'import matplotlib']);
    return true;
  } catch {
    return false;
  }
})();

let fake: FakeE2B;
const options = (): E2BOptions => ({
  apiKey: fake.apiKey,
  template: 'base',
  apiUrl: fake.apiUrl,
  sandboxUrl: fake.sandboxUrl,
  lifetimeMs: 3_600_000,
});
beforeAll(async () => {
  fake = await startFakeE2B();
});
afterAll(async () => {
  await fake?.close();
});
const metadata = { userId: 'alice', sessionId: 'session-1', deployment: 'contract-e2b' };

describeSandboxContract('e2b', {
  makeProvider: () => new E2BSandboxProvider(options()),
  spec: () => ({ metadata }),
  matplotlib: hasMatplotlib,
});

describe('E2B adapter', () => {
  const limits = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };

  it('creates sandboxes with the API key, the template, metadata and a pause-on-timeout lifetime', async () => {
    const provider = new E2BSandboxProvider({ ...options(), template: 'code-tools' });
    const sandbox = await provider.create({ metadata });
    const seen = fake.sandboxes.get(sandbox.id)!;
    expect(seen).toMatchObject({ templateID: 'code-tools', metadata, autoPause: true });
    expect(seen.endAt.getTime() - seen.startedAt.getTime()).toBeGreaterThan(3_500_000);
    expect(sandbox.workdir).toBe('/home/user');
    expect((await sandbox.runCommand('pwd', limits)).stdout).toBe('/home/user\n');
    await provider.destroy(sandbox.id);
  });

  it('answers a wrong API key with a provider error naming E2B', async () => {
    const provider = new E2BSandboxProvider({ ...options(), apiKey: 'e2b_wrong' });
    const failure = await provider.create({ metadata }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(SandboxError);
    expect(failure).toMatchObject({ code: 'provider_error' });
    expect((failure as Error).message).toMatch(/E2B: could not create a sandbox/);
  });

  it('leaves no process running in the sandbox after a deadline', async () => {
    const provider = new E2BSandboxProvider(options());
    const sandbox = await provider.create({ metadata });
    const result = await sandbox.runCommand('sleep 30; echo late', { ...limits, timeoutMs: 800 });
    expect(result).toMatchObject({ timedOut: true, exitCode: null, stdout: '' });
    // Killed by the adapter (the stream's own deadline is 5 s later).
    await expect.poll(() => fake.running(sandbox.id), { timeout: 3_000 }).toBe(0);
    await provider.destroy(sandbox.id);
  });

  it('stops a call that floods its output, keeping the first bytes', async () => {
    const provider = new E2BSandboxProvider(options());
    const sandbox = await provider.create({ metadata });
    const result = await sandbox.runCommand('yes flood', { ...limits, maxOutputBytes: 100 });
    expect(result).toMatchObject({ truncated: true, timedOut: false });
    expect(result.stdout).toBe('flood\n'.repeat(17).slice(0, 100));
    expect(result.exitCode).toBeNull();
    await expect.poll(() => fake.running(sandbox.id), { timeout: 5_000 }).toBe(0);
    await provider.destroy(sandbox.id);
  });

  it('reads only the asked bytes of a large file', async () => {
    const provider = new E2BSandboxProvider(options());
    const sandbox = await provider.create({ metadata });
    await sandbox.runCommand('head -c 5000000 /dev/zero | tr "\\0" a > big.txt', limits);
    const read = await sandbox.readFile('big.txt', 10);
    expect(Buffer.from(read.data).toString()).toBe('aaaaaaaaaa');
    expect(read.truncated).toBe(true);
    await provider.destroy(sandbox.id);
  });

  it('reads no figure past its room when it grew after it was listed', async () => {
    const provider = new E2BSandboxProvider(options());
    const sandbox = await provider.create({ metadata });
    // The code wrote a small PNG; by the time it is downloaded, something still running in the
    // sandbox made it 40 MiB.
    fake.beforeFileRead = async (host) => {
      if (host.endsWith('grows.png')) await appendFile(host, Buffer.alloc(40 * 1024 * 1024));
    };
    try {
      const result = await sandbox.runCode(
        'python',
        [
          'import os',
          "out = __file__[:-3] + '-out'",
          "open(os.path.join(out, 'grows.png'), 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + bytes(1000))",
          "open(os.path.join(out, 'small.png'), 'wb').write(b'\\x89PNG\\r\\n\\x1a\\nsmall')",
        ].join('\n'),
        limits,
      );
      expect(result.exitCode).toBe(0);
      expect(
        result.images.map((i) => Buffer.from(i.data, 'base64').subarray(8).toString()),
      ).toEqual(['small']);
      expect(result.imagesLeftOut).toBe(1);
    } finally {
      fake.beforeFileRead = undefined;
      await provider.destroy(sandbox.id);
    }
  });

  it('finds nothing for a sandbox E2B killed at the end of its lifetime', async () => {
    const provider = new E2BSandboxProvider(options());
    const sandbox = await provider.create({ metadata });
    await provider.destroy(sandbox.id);
    expect(await provider.connect(sandbox.id)).toBeUndefined();
    const paused = await provider.create({ metadata });
    // E2B pauses it at the end of its lifetime (onTimeout: pause): connect resumes it.
    fake.sandboxes.get(paused.id)!.endAt = new Date(Date.now() - 1);
    expect(
      (await provider.list(metadata.deployment)).find((s) => s.id === paused.id),
    ).toMatchObject({ state: 'paused' });
    const resumed = await provider.connect(paused.id);
    expect((await resumed!.runCommand('echo back', limits)).stdout).toBe('back\n');
    await provider.destroy(paused.id);
  });

  it('lists every page of a deployment and no other deployment', async () => {
    const provider = new E2BSandboxProvider(options());
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push((await provider.create({ metadata: { ...metadata, deployment: 'paged' } })).id);
    const other = await provider.create({ metadata: { ...metadata, deployment: 'other' } });
    fake.pageSize = 2;
    const listed = await provider.list('paged');
    fake.pageSize = 100;
    expect(listed.map((s) => s.id).sort()).toEqual([...ids].sort());
    for (const id of [...ids, other.id]) await provider.destroy(id);
  });
});
