import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxError, type SandboxProvider, type SandboxSpec } from './sandbox.js';

/** What each adapter's test gives the contract. */
export interface ContractSetup {
  /** A provider; called twice to show a sandbox is found again by another instance. */
  readonly makeProvider: () => SandboxProvider | Promise<SandboxProvider>;
  /** The spec of the sandboxes made (a working directory for local ones). */
  readonly spec: () => SandboxSpec;
  /** Whether python can import matplotlib (an image test needs it). */
  readonly matplotlib: boolean;
}

const LIMITS = { timeoutMs: 20_000, maxOutputBytes: 64 * 1024 };

/**
 * The behaviour every Sandbox adapter has, whatever runs the code: the code tools,
 * the per-session lease and the reaper rely on exactly this.
 */
export function describeSandboxContract(name: string, setup: ContractSetup): void {
  describe(`Sandbox contract: ${name}`, () => {
    let provider: SandboxProvider;
    const created: string[] = [];
    beforeAll(async () => {
      provider = await setup.makeProvider();
    });
    afterAll(async () => {
      for (const id of created) await provider.destroy(id);
    });
    let lastSpec: SandboxSpec | undefined;
    const create = async () => {
      lastSpec = setup.spec();
      const sandbox = await provider.create(lastSpec);
      created.push(sandbox.id);
      return sandbox;
    };

    it('runs python, javascript and bash with stdout, stderr and the exit code', async () => {
      const sandbox = await create();
      const py = await sandbox.runCode(
        'python',
        'import sys\nprint("hello from", "python")\nprint("warn", file=sys.stderr)',
        LIMITS,
      );
      expect(py).toMatchObject({ stdout: 'hello from python\n', stderr: 'warn\n', exitCode: 0 });
      expect(py.timedOut).toBe(false);
      const js = await sandbox.runCode('javascript', 'console.log(6 * 7)', LIMITS);
      expect(js).toMatchObject({ stdout: '42\n', exitCode: 0 });
      const sh = await sandbox.runCode('bash', 'echo "$((2 + 3))"; exit 3', LIMITS);
      expect(sh).toMatchObject({ stdout: '5\n', exitCode: 3 });
      const failing = await sandbox.runCode('python', 'raise ValueError("no")', LIMITS);
      expect(failing.exitCode).not.toBe(0);
      expect(failing.stderr).toContain('ValueError: no');
    });

    it('kills a call at its deadline, says so, and the next call works', async () => {
      const sandbox = await create();
      const looping = await sandbox.runCode('python', 'while True:\n    pass', {
        ...LIMITS,
        timeoutMs: 1_000,
      });
      expect(looping).toMatchObject({ timedOut: true, exitCode: null });
      expect((await sandbox.runCommand('echo again', LIMITS)).stdout).toBe('again\n');
    });

    it('cuts output at the cap and marks it', async () => {
      const sandbox = await create();
      const loud = await sandbox.runCode('python', 'print("x" * 100000)', {
        ...LIMITS,
        maxOutputBytes: 1_000,
      });
      expect(loud.truncated).toBe(true);
      expect(loud.stdout.length).toBe(1_000);
      expect(loud.exitCode).toBe(0);
    });

    it('keeps files between calls and for another provider instance', async () => {
      const sandbox = await create();
      await sandbox.writeFile('notes/today.txt', 'written by the tool\n');
      const read = await sandbox.runCommand(
        'cat notes/today.txt && echo made > notes/b.txt',
        LIMITS,
      );
      expect(read.stdout).toBe('written by the tool\n');
      const again = await (await setup.makeProvider()).connect(sandbox.id, lastSpec!);
      expect(again).toBeDefined();
      const file = await again!.readFile('notes/b.txt', 100);
      expect(Buffer.from(file.data).toString()).toBe('made\n');
      expect(file.truncated).toBe(false);
      const cut = await again!.readFile('notes/today.txt', 7);
      expect(cut).toMatchObject({ truncated: true });
      expect(Buffer.from(cut.data).toString()).toBe('written');
      const listing = await again!.listFiles('.', 2);
      expect(listing).toEqual(
        expect.arrayContaining([
          { path: 'notes', type: 'directory' },
          { path: 'notes/today.txt', type: 'file', size: 20 },
          { path: 'notes/b.txt', type: 'file', size: 5 },
        ]),
      );
      await expect(again!.readFile('missing.txt', 10)).rejects.toMatchObject({ code: 'not_found' });
    });

    it('refuses paths that leave the sandbox', async () => {
      const sandbox = await create();
      for (const path of ['../../etc/passwd', '/etc/passwd', '../outside.txt']) {
        await expect(sandbox.writeFile(path, 'x')).rejects.toBeInstanceOf(SandboxError);
        await expect(sandbox.readFile(path, 10)).rejects.toMatchObject({ code: 'path_outside' });
      }
    });

    it.runIf(setup.matplotlib)('returns the figures python draws as PNG images', async () => {
      const sandbox = await create();
      const result = await sandbox.runCode(
        'python',
        'import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title("squares")\nplt.show()\nprint("drawn")',
        LIMITS,
      );
      expect(result.stdout).toBe('drawn\n');
      expect(result.images).toHaveLength(1);
      expect(result.images[0]!.mimeType).toBe('image/png');
      const png = Buffer.from(result.images[0]!.data, 'base64');
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      const next = await sandbox.runCode('python', 'print(1)', LIMITS);
      expect(next.images).toEqual([]);
    });

    it('is paused, found again, listed by deployment, and gone once destroyed', async () => {
      const spec = setup.spec();
      const sandbox = await provider.create(spec);
      await sandbox.writeFile('kept.txt', 'still here');
      await provider.pause(sandbox.id);
      const listed = await provider.list(spec.metadata.deployment);
      expect(listed.find((s) => s.id === sandbox.id)).toMatchObject({
        state: 'paused',
        metadata: spec.metadata,
      });
      const resumed = await provider.connect(sandbox.id, spec);
      expect(Buffer.from((await resumed!.readFile('kept.txt', 100)).data).toString()).toBe(
        'still here',
      );
      await provider.destroy(sandbox.id);
      expect(await provider.connect(sandbox.id, spec)).toBeUndefined();
      expect((await provider.list(spec.metadata.deployment)).map((s) => s.id)).not.toContain(
        sandbox.id,
      );
      await provider.destroy(sandbox.id); // again: not an error
    });
  });
}
