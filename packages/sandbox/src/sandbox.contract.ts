import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_IMAGE_BYTES_PER_CALL,
  MAX_IMAGES_PER_CALL,
  SandboxError,
  type SandboxProvider,
  type SandboxSpec,
} from './sandbox.js';

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
 * Python that writes image files where the adapter collects figures, as hostile code would:
 * `/tmp/outputs` in local sandboxes, the directory next to the code file on E2B. `files` is a
 * Python expression of `(name, bytes)` pairs; `PNG` is the PNG signature.
 */
const writeOutputs = (files: string) =>
  [
    'import os',
    "PNG = b'\\x89PNG\\r\\n\\x1a\\n'",
    "out = next(d for d in ['/tmp/outputs', __file__[:-3] + '-out'] if os.path.isdir(d))",
    `for name, data in ${files}:`,
    '    with open(os.path.join(out, name), "wb") as f:',
    '        f.write(data)',
  ].join('\n');

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

    it('returns at most 10 images and 10 MiB of them per call, PNGs only, and says how many it left out', async () => {
      const sandbox = await create();
      // Thirty 600 KiB images: the first ten by name come back, twenty are left out.
      const many = await sandbox.runCode(
        'python',
        writeOutputs("[('%04d.png' % i, PNG + bytes([i]) * (600 * 1024)) for i in range(30)]"),
        LIMITS,
      );
      expect(many.exitCode).toBe(0);
      expect(many.images).toHaveLength(MAX_IMAGES_PER_CALL);
      expect(many.imagesLeftOut).toBe(30 - MAX_IMAGES_PER_CALL);
      expect(many.images.map((image) => Buffer.from(image.data, 'base64')[8])).toEqual([
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
      ]);
      // Three 4 MiB images: two fit in the 10 MiB of a call.
      const large = await sandbox.runCode(
        'python',
        writeOutputs("[('big-%d.png' % i, PNG + bytes(4 * 1024 * 1024)) for i in range(3)]"),
        LIMITS,
      );
      expect(large.images).toHaveLength(2);
      expect(large.imagesLeftOut).toBe(1);
      const bytes = large.images.reduce((n, i) => n + Buffer.from(i.data, 'base64').length, 0);
      expect(bytes).toBeLessThanOrEqual(MAX_IMAGE_BYTES_PER_CALL);
      // A file named .png that is no PNG is not returned as an image.
      const fake = await sandbox.runCode(
        'python',
        writeOutputs("[('a.png', b'<svg onload=alert(1)>'), ('b.png', PNG + b'ok')]"),
        LIMITS,
      );
      expect(fake.images.map((i) => Buffer.from(i.data, 'base64').toString('latin1'))).toEqual([
        '\x89PNG\r\n\x1a\nok',
      ]);
      expect(fake.imagesLeftOut).toBe(1);
      // Every file was removed: the next call has none.
      const next = await sandbox.runCode('python', 'print(1)', LIMITS);
      expect(next.images).toEqual([]);
      expect(next.imagesLeftOut ?? 0).toBe(0);
    });

    it('stops a listing at its limit and says it was cut', async () => {
      const sandbox = await create();
      const made = await sandbox.runCommand(
        'mkdir -p many/deep && cd many && seq -w 1 3000 | xargs touch && touch deep/x',
        LIMITS,
      );
      expect(made.exitCode).toBe(0);
      const cut = await sandbox.listFiles('.', 3, { limit: 100 });
      expect(cut).toHaveLength(100);
      expect(cut.cut).toBe(true);
      const paths = cut.map((e) => e.path);
      expect(paths).toEqual([...paths].sort());
      const whole = await sandbox.listFiles('many', 2, { limit: 3002 });
      expect(whole).toHaveLength(3002);
      expect(whole.cut).toBeUndefined();
      expect(whole.slice(0, 2)).toEqual([
        { path: '0001', type: 'file', size: 0 },
        { path: '0002', type: 'file', size: 0 },
      ]);
      expect(whole.at(-1)).toEqual({ path: 'deep/x', type: 'file', size: 0 });
      // Exactly the limit is not cut.
      expect((await sandbox.listFiles('many/deep', 1, { limit: 1 })).cut).toBeUndefined();
    });

    it('lists a name with newlines as the one entry it is', async () => {
      const sandbox = await create();
      const name = 'a\nb (5 bytes)\nfake.txt';
      await sandbox.runCode(
        'python',
        `import os\nos.mkdir('odd')\nopen(os.path.join('odd', ${JSON.stringify(name)}), 'w').write('x')`,
        LIMITS,
      );
      expect(await sandbox.listFiles('odd', 1, { limit: 10 })).toEqual([
        { path: name, type: 'file', size: 1 },
      ]);
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
