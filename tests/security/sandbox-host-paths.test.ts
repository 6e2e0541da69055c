/**
 * What sandboxed code can learn of the host's paths. The kernel shows, in `/proc/<pid>/mountinfo`,
 * each bind mount's source as its path within its own file system: bind mounts from a staging
 * folder, or through a descriptor, change nothing (the path of the directory itself is shown).
 * So the service's folders are named there unless the sandboxes' state directory and users' root
 * are file systems of their own (volumes), as docs/sandbox.md asks of an operator who wants them
 * hidden. Here both are (tmpfs mounts made by the test, which needs root for them), laid out as
 * the service does by default (`DATA_DIR/sandboxes`), and hostile code reads everything it can:
 * no path of `DATA_DIR`, of the users' root or of the test's folder comes back, nor the secret
 * planted in the service's environment, from mountinfo, mounts, mountstats, cgroups, any
 * process's command line or environment, the working directory, or the errors of the code tools
 * and of the code itself.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BubblewrapSandboxProvider } from '@agent-backend/sandbox';
import { bwrapUnusable, sandboxFolders, toolsOn, userFolder } from '../sandbox-helpers.js';

const { root, usersRoot, secret: SECRET } = sandboxFolders('sbx-host-paths');
const dataDir = join(root, 'data');
const stateDir = join(dataDir, 'sandboxes');
const CANARY = 'SANDBOX_HOST_PATHS_CANARY';

/** Why this host cannot run the suite: bwrap, or mounting the two file systems (root only). */
const unusable =
  bwrapUnusable ?? (process.getuid?.() !== 0 ? 'mounting the volumes needs root' : undefined);
if (unusable) console.warn(`sandbox host paths suite skipped: ${unusable}`);

const mounted: string[] = [];
beforeAll(() => {
  if (unusable) return;
  for (const dir of [stateDir, usersRoot]) {
    mkdirSync(dir, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m,mode=0755', 'sandbox-volume', dir]);
    mounted.push(dir);
  }
  process.env[CANARY] = SECRET;
});
afterAll(() => {
  delete process.env[CANARY];
  for (const dir of mounted) execFileSync('umount', ['-l', dir]);
});

describe.skipIf(unusable !== undefined)(
  'host paths in a bubblewrap sandbox whose state and users root are volumes',
  () => {
    it('shows sandboxed code no path of the service, nor its environment', async () => {
      const sandbox = await new BubblewrapSandboxProvider({ stateDir }).create({
        metadata: { userId: 'mallory', sessionId: 'paths', deployment: 'host-paths' },
        hostWorkingDirectory: userFolder(usersRoot, 'mallory', 'project'),
      });
      const call = toolsOn(sandbox, { timeoutMs: 30_000, maxOutputBytes: 1024 * 1024 });

      const answers = [
        await call('run_command', {
          command: [
            'for p in /proc/[0-9]* /proc/self /proc/thread-self; do',
            '  for f in mountinfo mounts mountstats cgroup cpuset; do echo "== $p/$f"; cat $p/$f; done',
            '  echo "== $p/cmdline"; tr "\\0" " " < $p/cmdline; echo',
            '  echo "== $p/environ"; tr "\\0" "\\n" < $p/environ',
            '  echo "== $p/exe"; readlink $p/exe; echo "== $p/cwd"; readlink $p/cwd; echo "== $p/root"; readlink $p/root',
            'done 2>&1',
            'echo "PWD=$PWD"; pwd; pwd -P; env; cat /nonexistent 2>&1; cd /nowhere 2>&1',
          ].join('\n'),
        }),
        await call('execute_code', {
          language: 'python',
          code: 'import os\nprint(os.getcwd(), os.environ)\nopen("/nonexistent")',
        }),
        await call('execute_code', {
          language: 'javascript',
          code: 'console.log(process.cwd(), process.execPath, process.argv); throw new Error("boom")',
        }),
        await call('read_file', { path: 'missing/file.txt' }),
        await call('write_file', { path: '../../escape.txt', content: 'x' }),
        await call('list_files', { path: 'nowhere' }),
      ];
      const shown = answers.map((a) => a.content).join('\n');
      // Read what it was meant to read (mountinfo of every process, the errors).
      expect(shown).toMatch(/ \/workspace rw,/);
      expect(shown).toContain('Traceback');
      expect(shown).toContain('Error: boom');
      expect(answers.slice(3).every((a) => a.isError)).toBe(true);
      for (const hidden of [root, dataDir, stateDir, usersRoot, SECRET, CANARY]) {
        expect(shown).not.toContain(hidden);
      }
      // The mounts name paths within the volumes only: the user's folder and the sandbox's state.
      expect(shown).toMatch(/ \/mallory\/project \/workspace rw,/);
      expect(shown).toContain(` /${sandbox.id}/tmp /tmp rw,`);
    });
  },
);
