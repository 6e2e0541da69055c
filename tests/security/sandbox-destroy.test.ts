/**
 * Destroying a local sandbox (the worker's sweep, retention and a user's erasure all go through
 * the providers' `destroy`) removes its state directory on the host, which holds what the
 * sandbox's code made: its `/tmp` and, when no working directory was named, its workspace. That
 * code is hostile: it plants links to host folders and files there, and may still be running
 * (a call on another replica) and swapping folders for links while the host removes them. The
 * removal must never follow one: the host's folder and file survive, the state directory goes.
 */
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import {
  BubblewrapSandboxProvider,
  DockerSandboxProvider,
  MAX_HELD_DIRS,
  type SandboxProvider,
} from '@agent-backend/sandbox';
import { startFakeDocker, type FakeDocker } from '@agent-backend/testing';
import { LIMITS, sandboxFolders, userFolder, withoutBwrap } from '../sandbox-helpers.js';

const skip = withoutBwrap('sandbox destroy suite');
const { root, stateDir, usersRoot, secret: SECRET } = sandboxFolders('sbx-destroy');
/** A host folder with 200 files and a host file, outside every sandbox. */
const hostFolder = join(root, 'host-folder');
const hostFile = join(root, 'host-file.pem');
const HOST_ENTRIES = Array.from({ length: 200 }, (_, i) => `keep-${i}`);
const metadata = (session: string) => ({
  userId: 'mallory',
  sessionId: session,
  deployment: 'destroy-suite',
});

function expectHostIntact() {
  expect(readdirSync(hostFolder).sort()).toEqual([...HOST_ENTRIES].sort());
  for (const entry of HOST_ENTRIES) {
    expect(readFileSync(join(hostFolder, entry), 'utf8')).toBe(SECRET);
  }
  expect(readFileSync(hostFile, 'utf8')).toBe(SECRET);
}

/** Links to the host folder and file from every place of the sandbox's state it can write. */
const PLANT = [
  'for base in /tmp /workspace; do',
  `  ln -s ${hostFolder} $base/folder-link; ln -s ${hostFile} $base/file-link`,
  `  mkdir -p $base/deep/er && ln -s ${hostFolder} $base/deep/er/folder-link`,
  `  ln -s ${hostFolder}/ $base/slash-link; ln -s ../../../../../../../../${hostFolder} $base/relative-link`,
  'done',
  `rm -rf /tmp/outputs && ln -s ${hostFolder} /tmp/outputs`,
  'echo planted',
].join('\n');

let docker: FakeDocker;
beforeAll(async () => {
  mkdirSync(hostFolder, { recursive: true });
  for (const entry of HOST_ENTRIES) writeFileSync(join(hostFolder, entry), SECRET);
  writeFileSync(hostFile, SECRET);
  docker = await startFakeDocker();
});
afterAll(async () => {
  await docker?.close();
});

const runtimes: Array<[string, () => SandboxProvider]> = [
  ['bubblewrap', () => new BubblewrapSandboxProvider({ stateDir })],
  [
    'docker',
    () => new DockerSandboxProvider({ stateDir, host: docker.host, image: 'sandbox:test' }),
  ],
];

describe.skipIf(skip).each(runtimes)('destroying a %s sandbox', (_name, makeProvider) => {
  it('removes its state and follows none of the links its code planted', async () => {
    const provider = makeProvider();
    // No working directory named: the workspace is the sandbox's own, removed with it.
    const sandbox = await provider.create({ metadata: metadata('planted') });
    const planted = await sandbox.runCommand(PLANT, LIMITS);
    expect(planted.stdout).toBe('planted\n');
    await provider.destroy(sandbox.id);
    expect(existsSync(join(stateDir, sandbox.id))).toBe(false);
    expectHostIntact();
  });

  it("never touches the user's working directory, even one swapped for a link", async () => {
    const dir = userFolder(usersRoot, 'mallory', `app-${_name}`);
    const provider = makeProvider();
    const sandbox = await provider.create({
      metadata: metadata('swapped'),
      hostWorkingDirectory: dir,
    });
    expect((await sandbox.runCommand(PLANT, LIMITS)).stdout).toBe('planted\n');
    // Another session of the user swaps the folder for a link to the host folder.
    execFileSync('mv', [dir, `${dir}.old`]);
    symlinkSync(hostFolder, dir);
    await provider.destroy(sandbox.id);
    expect(existsSync(join(stateDir, sandbox.id))).toBe(false);
    expectHostIntact();
    // The user's folder (now under its old name) is as the code left it.
    expect(readdirSync(`${dir}.old`).sort()).toEqual(
      ['deep', 'file-link', 'folder-link', 'relative-link', 'slash-link'].sort(),
    );
  });

  it('removes a tree 6,000 folders deep holding a few descriptors', async () => {
    const provider = makeProvider();
    const sandbox = await provider.create({ metadata: metadata('deep') });
    // Made without following a link: each folder entered relative to the last one.
    const made = await sandbox.runCode(
      'python',
      [
        'import os',
        'os.chdir("/tmp")',
        'for _ in range(6000):',
        '    os.mkdir("d")',
        '    os.chdir("d")',
        `os.symlink(${JSON.stringify(hostFolder)}, "folder-link")`,
        'os.mkdir("last")',
        `os.symlink(${JSON.stringify(hostFolder)}, "last/folder-link")`,
        'print("deep")',
      ].join('\n'),
      LIMITS,
    );
    expect(made.stdout).toBe('deep\n');
    // This process may open only a few descriptors more than it has open now (one held per
    // level would need 6,000): the removal must fit, and whatever else the process does.
    const open = readdirSync('/proc/self/fd').map(Number);
    const limit = Math.max(...open) + 1 + MAX_HELD_DIRS + 32;
    const [soft, hard] = readFileSync('/proc/self/limits', 'utf8')
      .match(/^Max open files\s+(\d+)\s+(\d+)/m)!
      .slice(1);
    execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${limit}:${hard}`]);
    try {
      await provider.destroy(sandbox.id);
    } finally {
      execFileSync('prlimit', [`--pid=${process.pid}`, `--nofile=${soft}:${hard}`]);
    }
    expect(existsSync(join(stateDir, sandbox.id))).toBe(false);
    expectHostIntact();
  });
});

describe.skipIf(skip)('destroying a bubblewrap sandbox while its code runs', () => {
  it('follows no link that code swaps in for a folder during the removal', async () => {
    // The worker destroys a sandbox whose call still runs on an API replica: another provider
    // instance, which cannot stop that call, and which tries again while the removal fails (the
    // sweep does, each interval). The call swaps a folder of its /tmp with a link to the host
    // folder as fast as it can (renameat2 RENAME_EXCHANGE: the name is a folder one moment, a
    // link the next), refilling both when the host removed one and adding files, until its deadline.
    const race = [
      'import ctypes, os',
      'exchange = ctypes.CDLL(None, use_errno=True).renameat2',
      `HOST = ${JSON.stringify(hostFolder)}`,
      'def refill():',
      '    try:',
      '        os.makedirs("/tmp/d/sub", exist_ok=True)',
      '        for k in range(3): open(f"/tmp/d/f{k}", "w").close()',
      '    except OSError: pass',
      '    try: os.symlink(HOST, "/tmp/l")',
      '    except OSError: pass',
      'refill()',
      'open("/tmp/racing", "w").close()',
      // A file put back whenever the host removed it, so the host never finds /tmp empty and
      // keeps coming back.
      'while True:',
      '    if exchange(-100, b"/tmp/d", -100, b"/tmp/l", 2) != 0: refill()',
      '    if not os.path.lexists("/tmp/keep"):',
      '        try: open("/tmp/keep", "w").close()',
      '        except OSError: pass',
    ].join('\n');
    for (let round = 0; round < 3; round++) {
      const sandbox = await new BubblewrapSandboxProvider({ stateDir }).create({
        metadata: metadata(`race-${round}`),
      });
      let done = false;
      const call = sandbox
        .runCode('python', race, { ...LIMITS, timeoutMs: 5_000 })
        .finally(() => (done = true));
      const racing = join(stateDir, sandbox.id, 'tmp', 'racing');
      await expect.poll(() => existsSync(racing), { timeout: 20_000, interval: 20 }).toBe(true);
      const worker = new BubblewrapSandboxProvider({ stateDir });
      let attempts = 0;
      while (!done) {
        attempts += 1;
        // It may give up while the code refills the folder; it never follows a link.
        await worker.destroy(sandbox.id).catch(() => undefined);
      }
      expect(attempts).toBeGreaterThan(1);
      expect((await call).timedOut).toBe(true);
      await worker.destroy(sandbox.id);
      expect(existsSync(join(stateDir, sandbox.id))).toBe(false);
      expectHostIntact();
    }
  });
});
