/**
 * The Docker runtime's window between checking the working directory and the engine's mount:
 * the engine mounts by path whenever a container starts (creation, and after every pause), so
 * another session of the same user that swaps the folder for a link to another user's in that
 * window would have it followed. The adapter pins the folder before the start and compares what
 * the container mounted with it before anything else runs there. No Docker engine here: the fake
 * engine (which mounts at start, following links, as the daemon does) lets the test swap the
 * folder exactly between the adapter's check and the mount.
 */
import { execFileSync } from 'node:child_process';
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider, resolveWorkingDirectory } from '@agent-backend/sandbox';
import { startFakeDocker, type FakeDocker } from '@agent-backend/testing';

const bwrapUnusable = (() => {
  try {
    execFileSync('bwrap', ['--unshare-all', '--ro-bind', '/', '/', '--', 'true'], {
      stdio: 'pipe',
    });
    return undefined;
  } catch (error) {
    return `bwrap cannot run on this host: ${(error as Error).message}`;
  }
})();
if (bwrapUnusable) console.warn(`docker mount suite skipped (the fake engine runs bwrap)`);

const root = mkdtempSync(join(tmpdir(), 'sbx-docker-mount-'));
const stateDir = join(root, 'state');
const usersRoot = join(root, 'users');
const SECRET = `victim-secret-${process.pid}-${Date.now()}`;
const LIMITS = { timeoutMs: 30_000, maxOutputBytes: 64 * 1024 };
const victim = join(usersRoot, 'victim', 'work');
const app = join(usersRoot, 'mallory', 'app');

/** What the other session does when armed: the folder swapped for a link to the victim's. */
let swapBeforeMount = false;
const swap = () => {
  renameSync(app, `${app}.old`);
  symlinkSync(victim, app);
};
/** The folder back in its place (when it is not). */
const putBack = () => {
  swapBeforeMount = false;
  if (!lstatSync(app).isSymbolicLink()) return;
  rmSync(app);
  renameSync(`${app}.old`, app);
};

let docker: FakeDocker;
beforeAll(async () => {
  mkdirSync(victim, { recursive: true });
  writeFileSync(join(victim, 'secret.txt'), SECRET);
  mkdirSync(app, { recursive: true });
  writeFileSync(join(app, 'mine.txt'), 'mine');
  docker = await startFakeDocker({
    beforeMount: () => {
      if (!swapBeforeMount) return;
      swapBeforeMount = false;
      swap();
    },
  });
});
afterEach(putBack);
afterAll(async () => {
  await docker?.close();
});

const expectVictimUntouched = () => {
  expect(readdirSync(victim)).toEqual(['secret.txt']);
  expect(readFileSync(victim + '/secret.txt', 'utf8')).toBe(SECRET);
};

describe.skipIf(bwrapUnusable !== undefined)(
  'the Docker runtime mounting a working directory',
  () => {
    const provider = () =>
      new DockerSandboxProvider({ stateDir, host: docker.host, image: 'sandbox:test' });
    const spec = (session: string) => {
      const resolved = resolveWorkingDirectory(usersRoot, 'mallory', 'app');
      if (!('dir' in resolved)) throw new Error(resolved.refused);
      return {
        metadata: { userId: 'mallory', sessionId: session, deployment: 'docker-mount' },
        hostWorkingDirectory: resolved.dir,
      };
    };

    it('refuses a container whose folder was swapped between the check and the mount', async () => {
      swapBeforeMount = true;
      await expect(provider().create(spec('at-create'))).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringContaining(
          '/workspace is no longer the directory this run was given',
        ),
      });
      // Stopped before anything of the sandbox ran in it.
      const containers = [...docker.containers.values()].filter(
        (c) => c.config.Labels?.['agent-backend.session'] === 'at-create',
      );
      expect(containers.map((c) => c.running)).toEqual([false]);
      putBack();
      expectVictimUntouched();
    });

    it('refuses the restart after a pause when the folder was swapped before the mount', async () => {
      const docker_ = provider();
      const sandbox = await docker_.create(spec('at-restart'));
      expect((await sandbox.runCommand('cat mine.txt', LIMITS)).stdout).toBe('mine');
      await docker_.pause(sandbox.id);
      // The next call starts the container again: the engine mounts the path once more.
      swapBeforeMount = true;
      const after = await sandbox.runCommand('cat secret.txt; echo pwned > pwned.txt', LIMITS).then(
        (result) => ({ ok: true as const, result }),
        (error: unknown) => ({ ok: false as const, error }),
      );
      expect(after).toMatchObject({ ok: false, error: { code: 'unavailable' } });
      expect(JSON.stringify(after)).not.toContain(SECRET);
      putBack();
      expectVictimUntouched();
      // Put back, the folder is mounted again and the sandbox works.
      expect((await sandbox.runCommand('cat mine.txt', LIMITS)).stdout).toBe('mine');
      await docker_.destroy(sandbox.id);
    });

    it('keeps the folder it mounted when the path is swapped while it runs', async () => {
      const docker_ = provider();
      const sandbox = await docker_.create(spec('while-running'));
      swap();
      try {
        const seen = await sandbox.runCommand('ls; cat mine.txt', LIMITS);
        expect(seen.stdout).toBe('mine.txt\nmine');
        expect(seen.stdout).not.toContain('secret');
      } finally {
        putBack();
      }
      expectVictimUntouched();
      await docker_.destroy(sandbox.id);
    });
  },
);
