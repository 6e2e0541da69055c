/**
 * Sandbox escapes: a hostile user's code against the local sandboxes for real (bubblewrap;
 * Docker's adapter through the fake engine, which runs each exec in bubblewrap too, so the code
 * both runtimes share is played against as well). Each case plants a secret on the host outside
 * the sandbox and checks it never comes back (in the call's result or in what the code tools
 * answer, which is what `tool_result` events carry) and that nothing of the host was written.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolOutput } from '@agent-backend/agent-runtime';
import {
  BubblewrapSandboxProvider,
  DockerSandboxProvider,
  processLimitMode,
  resolveWorkingDirectory,
  type SandboxHandle,
  type SandboxProvider,
} from '@agent-backend/sandbox';
import { startFakeDocker, type FakeDocker } from '@agent-backend/testing';
import { sandboxFolders, toolsOn as tools, userFolder, withoutBwrap } from '../sandbox-helpers.js';

const skip = withoutBwrap('sandbox escape suite');
const { root, stateDir, usersRoot, secret: SECRET } = sandboxFolders('sbx-escape');
/** The host's secrets: a file and a folder outside every sandbox, and the test's environment. */
const secretFile = join(root, 'host-secret.pem');
const secretFolder = join(root, 'host-folder');
const CANARY = 'SANDBOX_ESCAPE_CANARY';
const LIMITS = { timeoutMs: 30_000, maxOutputBytes: 256 * 1024 };

let n = 0;
/** A fresh project of `user`, as the service resolves `working_directory` for that user. */
const project = (user: string, name = `project-${n++}`) => userFolder(usersRoot, user, name);
const metadata = (user: string, session: string) => ({
  userId: user,
  sessionId: session,
  deployment: 'escape-suite',
});
/** The code tools on `sandbox`, as a run gets them; `call` answers what `tool_result` carries. */
const toolsOn = (sandbox: SandboxHandle) => tools(sandbox, LIMITS);

/** Everything an answer carries, images decoded: the secret must not be in it. */
const everything = (output: ToolOutput) =>
  [
    output.content,
    ...(output.images ?? []).map((image) => Buffer.from(image.data, 'base64').toString('latin1')),
  ].join('\n');

let docker: FakeDocker;
beforeAll(async () => {
  writeFileSync(secretFile, SECRET);
  mkdirSync(secretFolder, { recursive: true });
  writeFileSync(join(secretFolder, 'plot.png'), SECRET);
  process.env[CANARY] = SECRET;
  docker = await startFakeDocker();
});
afterAll(async () => {
  delete process.env[CANARY];
  await docker?.close();
});

/** Whether the cgroup at `dir` holds a process this test process started. */
function holdsChildOfUs(dir: string): boolean {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .some((pid) => {
        try {
          const status = readFileSync(`/proc/${pid}/status`, 'utf8');
          return status.match(/^PPid:\s+(\d+)$/m)?.[1] === String(process.pid);
        } catch {
          return false;
        }
      });
  } catch {
    return false;
  }
}

/** Neither secret was read out, and the host's secret file and folder are as planted. */
function expectHostUntouched(...answers: string[]) {
  for (const answer of answers) expect(answer).not.toContain(SECRET);
  expect(readFileSync(secretFile, 'utf8')).toBe(SECRET);
  expect(readdirSync(secretFolder)).toEqual(['plot.png']);
  expect(readFileSync(join(secretFolder, 'plot.png'), 'utf8')).toBe(SECRET);
}

/**
 * Both local runtimes. The fake Docker engine runs each exec in a bwrap of its own whose command
 * line names host paths (real Docker's init does not), so what the sandbox's processes show is
 * checked on bubblewrap only.
 */
const runtimes: Array<[string, () => SandboxProvider, { fakeEngine: boolean }]> = [
  ['bubblewrap', () => new BubblewrapSandboxProvider({ stateDir }), { fakeEngine: false }],
  [
    'docker (the shared host-side code)',
    () => new DockerSandboxProvider({ stateDir, host: docker.host, image: 'sandbox:test' }),
    { fakeEngine: true },
  ],
];

describe.skipIf(skip).each(runtimes)(
  'hostile code in a local sandbox: %s',
  (_name, makeProvider, { fakeEngine }) => {
    it('gets no host file through /tmp/outputs links (a file, /proc/self/environ)', async () => {
      const sandbox = await makeProvider().create({
        metadata: metadata('mallory', 'outputs-file'),
        hostWorkingDirectory: project('mallory'),
      });
      const call = toolsOn(sandbox);
      const answer = await call('execute_code', {
        language: 'python',
        code: [
          'import os',
          'os.makedirs("/tmp/outputs", exist_ok=True)',
          `os.symlink(${JSON.stringify(secretFile)}, "/tmp/outputs/a.png")`,
          'os.symlink("/proc/self/environ", "/tmp/outputs/b.png")',
          'os.symlink("/proc/1/environ", "/tmp/outputs/c.png")',
          'print("planted")',
        ].join('\n'),
      });
      expect(answer.content).toContain('planted');
      expect(answer.images ?? []).toEqual([]);
      expectHostUntouched(everything(answer));
      // The links are gone (removed, not followed), so the next call has nothing to return.
      const next = await call('execute_code', { language: 'python', code: 'print(1)' });
      expect(next.images ?? []).toEqual([]);
      expectHostUntouched(everything(next));
    });

    it('neither reads nor deletes a host folder /tmp/outputs is made a link to', async () => {
      const sandbox = await makeProvider().create({
        metadata: metadata('mallory', 'outputs-folder'),
        hostWorkingDirectory: project('mallory'),
      });
      const call = toolsOn(sandbox);
      const answer = await call('run_command', {
        command: `rm -rf /tmp/outputs && ln -s ${secretFolder} /tmp/outputs && echo linked`,
      });
      expect(answer.content).toContain('linked');
      const code = await call('execute_code', { language: 'python', code: 'print("after")' });
      expect(code.content).toContain('after');
      expect(code.images ?? []).toEqual([]);
      expectHostUntouched(everything(answer), everything(code));
    });

    it('writes no code file through a code folder replaced by a link', async () => {
      const sandbox = await makeProvider().create({
        metadata: metadata('mallory', 'code-folder'),
        hostWorkingDirectory: project('mallory'),
      });
      const call = toolsOn(sandbox);
      // Every place code files were or are: the old /tmp/.run, and the read-only /opt/code.
      const plant = await call('run_command', {
        command: [
          `rm -rf /tmp/.run; ln -s ${secretFolder} /tmp/.run`,
          `rm -rf /opt/code 2>&1; ln -s ${secretFolder} /opt/code/x 2>&1`,
          'touch /opt/code/new 2>&1',
          'echo planted',
        ].join('; '),
      });
      expect(plant.content).toContain('planted');
      const codes = {
        python: 'print("ran")',
        javascript: 'console.log("ran")',
        bash: 'sleep 2; echo ran',
      };
      for (const [language, code] of Object.entries(codes)) {
        // The host folder is watched while the call runs (code files are removed after it).
        const seen = new Set<string>();
        let running = true;
        const watching = (async () => {
          while (running) {
            for (const entry of readdirSync(secretFolder)) seen.add(entry);
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        })();
        const answer = await call('execute_code', { language, code });
        running = false;
        await watching;
        expect([...seen]).toEqual(['plot.png']);
        expect(answer.content).toContain('ran');
      }
      expectHostUntouched(everything(plant));
      // The code folder itself is read-only inside.
      expect(plant.content).toMatch(/Read-only file system/);
    });

    it('names no host path in what its processes and the file tools show', async () => {
      const dir = project('mallory');
      const sandbox = await makeProvider().create({
        metadata: metadata('mallory', 'host-paths'),
        hostWorkingDirectory: dir,
      });
      const call = toolsOn(sandbox);
      symlinkSync(secretFile, join(dir, 'key.pem'));
      const shown = await call('run_command', {
        command: [
          ...(fakeEngine
            ? []
            : [
                'for p in /proc/[0-9]*; do tr "\\0" " " < $p/cmdline; echo; tr "\\0" "\\n" < $p/environ; done 2>/dev/null',
              ]),
          'echo "PWD=$PWD"; pwd; env',
          'cat /nonexistent 2>&1; cd /nowhere 2>&1',
        ].join('; '),
      });
      const errors = await Promise.all([
        call('read_file', { path: 'key.pem' }),
        call('read_file', { path: 'missing/file.txt' }),
        call('write_file', { path: 'key.pem', content: 'x' }),
        call('write_file', { path: '../../escape.txt', content: 'x' }),
        call('list_files', { path: 'nowhere' }),
        call('read_file', { path: '/etc/passwd' }),
      ]);
      for (const output of [shown, ...errors]) {
        expect(output.content).not.toContain(root);
        expect(output.content).not.toContain(SECRET);
      }
      expect(shown.content).toContain('PWD=/workspace');
      // bwrap's options (host paths) come through a pipe, not its command line.
      if (!fakeEngine) expect(shown.content).toMatch(/bwrap --args/);
      expect(errors.every((e) => e.isError)).toBe(true);
      // The link in the working directory was not written through.
      expectHostUntouched();
      // A failure on the host side (the code directory unusable) names no host path either.
      const codeDir = join(stateDir, sandbox.id, 'code');
      rmSync(codeDir, { recursive: true, force: true });
      writeFileSync(codeDir, '');
      const failed = await call('execute_code', { language: 'python', code: 'print(1)' });
      expect(failed).toMatchObject({ isError: true });
      expect(failed.content).toContain('could not write the code file');
      expect(failed.content).not.toContain(root);
      rmSync(codeDir);
    });
  },
);

describe("each user's workspaces", () => {
  it('lie under a directory of their own that no other user id names', () => {
    project('mallory', 'app-of-mallory');
    // An id that is no single path segment would make the root (every user's) or a folder
    // outside it its directory.
    for (const user of ['', '.', '..', 'a/b', '../users', 'nul\0x']) {
      expect(resolveWorkingDirectory(usersRoot, user, 'mallory/app-of-mallory')).toEqual({
        refused: 'this user has no directory for local sandboxes on this service',
      });
    }
    expect(resolveWorkingDirectory(usersRoot, 'mallory', 'app-of-mallory')).toEqual({
      dir: join(usersRoot, 'mallory', 'app-of-mallory'),
    });
  });
});

describe('working_directory tells nothing of host paths', () => {
  it('refuses a missing, an outside and a linked-outside folder with one answer', () => {
    const mine = project('mallory', 'app-of-mallory');
    project('bob', 'bobs-app');
    // Links sandboxed code could have made in its working directory: to another user's folder
    // that exists, and to one that does not.
    symlinkSync(join(usersRoot, 'bob', 'bobs-app'), join(mine, 'to-bob'));
    symlinkSync(join(usersRoot, 'bob', 'nothing-here'), join(mine, 'to-nothing'));
    const answers = [
      join(usersRoot, 'bob', 'bobs-app'),
      join(usersRoot, 'bob', 'nothing-here'),
      secretFolder,
      join(root, 'no-such-folder'),
      'app-of-mallory/to-bob',
      'app-of-mallory/to-nothing',
      'app-of-mallory/missing',
    ].map((dir) => {
      const answer = resolveWorkingDirectory(usersRoot, 'mallory', dir);
      expect(answer).toHaveProperty('refused');
      return (answer as { refused: string }).refused.replace(dir, '<dir>');
    });
    expect(new Set(answers)).toEqual(
      new Set(["working_directory <dir> is not a directory inside this user's directory"]),
    );
  });
});

describe.skipIf(skip)('hostile code in a bubblewrap sandbox', () => {
  it('runs as uid 65534 with no capability, not as the service', async () => {
    const sandbox = await new BubblewrapSandboxProvider({ stateDir }).create({
      metadata: metadata('mallory', 'uid'),
      hostWorkingDirectory: project('mallory'),
    });
    const who = await sandbox.runCommand(
      'id -u; id -g; grep -E "^Cap(Eff|Prm|Amb):" /proc/self/status; touch /etc/x 2>&1 || echo refused',
      LIMITS,
    );
    expect(who.stdout.split('\n')).toEqual([
      '65534',
      '65534',
      'CapPrm:\t0000000000000000',
      'CapEff:\t0000000000000000',
      'CapAmb:\t0000000000000000',
      expect.stringMatching(/Read-only file system|Permission denied/),
      'refused',
      '',
    ]);
  });

  it("cannot reach another user's workspace by swapping its working directory between calls", async () => {
    // The victim's workspace, under the same root; the attacker's two sessions: one works in
    // `<mallory>/app`, the other in `<mallory>` itself and so sees `app` as a plain folder.
    const victim = project('victim', 'work');
    writeFileSync(join(victim, 'secret.txt'), SECRET);
    const provider = new BubblewrapSandboxProvider({ stateDir });
    const app = project('mallory', 'app');
    const first = await provider.create({
      metadata: metadata('mallory', 'session-1'),
      hostWorkingDirectory: app,
    });
    const second = await provider.create({
      metadata: metadata('mallory', 'session-2'),
      hostWorkingDirectory: project('mallory', '.'),
    });
    expect((await first.runCommand('echo mine > mine.txt && cat mine.txt', LIMITS)).stdout).toBe(
      'mine\n',
    );
    for (const target of [victim, '../victim/work']) {
      const swap = await second.runCommand(
        `rm -rf app.old; mv app app.old && ln -s ${target} app && echo swapped`,
        LIMITS,
      );
      expect(swap.stdout).toBe('swapped\n');
      const call = toolsOn(first);
      const answers = [
        await call('run_command', { command: 'cat secret.txt; echo pwned > pwned.txt; ls' }),
        await call('execute_code', {
          language: 'python',
          code: 'print(open("secret.txt").read())',
        }),
        await call('read_file', { path: 'secret.txt' }),
        await call('list_files', {}),
        await call('write_file', { path: 'pwned-by-tool.txt', content: 'x' }),
      ];
      for (const answer of answers) {
        expect(answer.isError).toBe(true);
        expect(answer.content).not.toContain(SECRET);
        expect(answer.content).not.toContain(root);
      }
      // The swap between the run's check of working_directory and the sandbox's making (or
      // reconnecting): refused too, by both runtimes.
      const spec = { metadata: metadata('mallory', 'session-3'), hostWorkingDirectory: app };
      await expect(provider.create(spec)).rejects.toMatchObject({ code: 'unavailable' });
      await expect(provider.connect(first.id, spec)).rejects.toMatchObject({ code: 'unavailable' });
      const viaDocker = new DockerSandboxProvider({
        stateDir,
        host: docker.host,
        image: 'sandbox:test',
      });
      await expect(viaDocker.create(spec)).rejects.toMatchObject({ code: 'unavailable' });
      expect(readdirSync(victim)).toEqual(['secret.txt']);
      expect(readFileSync(join(victim, 'secret.txt'), 'utf8')).toBe(SECRET);
      // Put back, the directory works again.
      const back = await second.runCommand('rm app && mv app.old app && echo back', LIMITS);
      expect(back.stdout).toBe('back\n');
      expect((await first.runCommand('cat mine.txt', LIMITS)).stdout).toBe('mine\n');
    }
    // A directory the sandbox sees is renamed under it, never another one: the app is its own.
    expect(existsSync(join(usersRoot, 'mallory', 'app', 'mine.txt'))).toBe(true);
  });

  it('bounds /dev/shm to a small RAM disk of its own', async () => {
    const provider = new BubblewrapSandboxProvider({
      stateDir,
      limits: { shmBytes: 8 * 1024 * 1024 },
    });
    const sandbox = await provider.create({
      metadata: metadata('mallory', 'shm'),
      hostWorkingDirectory: project('mallory'),
    });
    const fill = await sandbox.runCommand(
      'head -c 4M /dev/zero > /dev/shm/small && stat -c %s /dev/shm/small && rm /dev/shm/small; ' +
        'head -c 64M /dev/zero > /dev/shm/fill; stat -c %s /dev/shm/fill',
      LIMITS,
    );
    const [small, filled] = fill.stdout.trim().split('\n').map(Number);
    expect(small).toBe(4 * 1024 * 1024);
    expect(filled).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(fill.stderr).toMatch(/No space left on device/);
    // Gone with the call: the next call starts with an empty one.
    expect((await sandbox.runCommand('ls /dev/shm | wc -l', LIMITS)).stdout).toBe('0\n');
  });

  const limitMode = processLimitMode();
  const memoryBounded = limitMode.kind === 'cgroup' && limitMode.memoryParent !== undefined;
  if (!memoryBounded) {
    console.warn('no memory cgroup on this host: the total memory of a call is not bounded here');
  }

  it.runIf(memoryBounded)(
    'bounds the memory of all processes of a call together, not only each one',
    async () => {
      // 96 MiB per process and for the call: four processes holding 40 MiB each are each within
      // the per-process limit, together past the call's.
      const provider = new BubblewrapSandboxProvider({
        stateDir,
        limits: { memoryBytes: 96 * 1024 * 1024 },
      });
      const sandbox = await provider.create({
        metadata: metadata('mallory', 'memory'),
        hostWorkingDirectory: project('mallory'),
      });
      // Each holds its memory until all four hold theirs (or 15 s passed): every survivor held
      // its 40 MiB while the others that survived held theirs.
      const hold = [
        'import os, sys, time',
        'i = sys.argv[1]',
        'block = bytearray(40 * 1024 * 1024)',
        'for k in range(0, len(block), 4096): block[k] = 1',
        'open(f"/tmp/held-{i}", "w").close()',
        'deadline = time.time() + 15',
        'while time.time() < deadline and len([f for f in os.listdir("/tmp") if f.startswith("held-")]) < 4:',
        '    time.sleep(0.1)',
        'print("survived", i, flush=True)',
      ].join('\n');
      const result = await sandbox.runCommand(
        `rm -f /tmp/held-*; cat > /tmp/hold.py <<'EOF'\n${hold}\nEOF\n` +
          'for i in 1 2 3 4; do python3 /tmp/hold.py $i & done; wait; echo done',
        { ...LIMITS, timeoutMs: 60_000 },
      );
      expect(result.stdout).toContain('done');
      const survivors = result.stdout.split('\n').filter((l) => l.startsWith('survived'));
      expect(survivors.length).toBeLessThanOrEqual(2);
    },
  );

  it.runIf(limitMode.kind === 'cgroup')(
    "removes the call's cgroups after a call killed at its deadline, every time",
    async () => {
      if (limitMode.kind !== 'cgroup') return;
      const parents = [limitMode.parent, limitMode.memoryParent].filter(
        (p): p is string => p !== undefined,
      );
      const provider = new BubblewrapSandboxProvider({ stateDir });
      const sandbox = await provider.create({
        metadata: metadata('mallory', 'deadline'),
        hostWorkingDirectory: project('mallory'),
      });
      for (let round = 0; round < 3; round++) {
        const before = new Set(parents.flatMap((p) => readdirSync(p).map((e) => join(p, e))));
        const call = sandbox.runCommand(
          // Detached from the call's output, so the call ends as soon as bwrap is killed, while
          // these are still being killed with its PID namespace.
          'for i in $(seq 20); do sleep 600 > /dev/null 2>&1 & ' +
            'python3 -c "import time; b = bytearray(8 << 20); time.sleep(600)" > /dev/null 2>&1 & done; wait',
          { ...LIMITS, timeoutMs: 1_500 },
        );
        // The call's own groups, seen while it runs: new ones holding a child of this process
        // (other tests on this host may make theirs meanwhile).
        let mine: string[] = [];
        await expect
          .poll(
            () => {
              mine = parents
                .flatMap((p) => readdirSync(p).map((e) => join(p, e)))
                .filter((d) => !before.has(d) && holdsChildOfUs(d));
              return mine.length;
            },
            { timeout: 20_000, interval: 20 },
          )
          .toBeGreaterThanOrEqual(parents.length);
        expect((await call).timedOut).toBe(true);
        for (const dir of mine) expect(existsSync(dir)).toBe(false);
      }
    },
  );
});
