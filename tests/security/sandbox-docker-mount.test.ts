/**
 * The Docker runtime's window between checking the working directory and the engine's mount:
 * the engine mounts by path whenever a container starts (creation, and after every pause), so
 * another session of the same user that swaps the folder for a link to another user's in that
 * window would have it followed. The adapter pins the folder before the start and compares what
 * the container mounted with it before anything else runs there. No Docker engine here: the fake
 * engine (which mounts at start, following links, as the daemon does) lets the test swap the
 * folder exactly between the adapter's check and the mount.
 */
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxProvider, type SandboxLogger } from '@agent-backend/sandbox';
import { startFakeDocker, type FakeDocker } from '@agent-backend/testing';
import { LIMITS, sandboxFolders, userFolder, withoutBwrap } from '../sandbox-helpers.js';

// The fake engine runs each exec in bubblewrap.
const skip = withoutBwrap('docker mount suite');
const { stateDir, usersRoot, secret: SECRET } = sandboxFolders('sbx-docker-mount');
const victim = join(usersRoot, 'victim', 'work');
const app = join(usersRoot, 'mallory', 'app');

/** An engine that answers 500 to `stop` while set. */
let refuseStop = false;

/** What the other session does when armed: the folder swapped for a link to the victim's. */
let swapBeforeMount = false;
const swap = () => {
  renameSync(app, `${app}.old`);
  symlinkSync(victim, app);
};
/** The folder back in its place (when it is not). */
const putBack = () => {
  swapBeforeMount = false;
  refuseStop = false;
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
    beforeStop: () =>
      refuseStop ? { status: 500, message: 'driver failed stopping container' } : undefined,
    // An image without coreutils' `stat`.
    missingCommands: { 'sandbox:no-stat': ['stat'] },
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

describe.skipIf(skip)('the Docker runtime mounting a working directory', () => {
  const provider = (image = 'sandbox:test', logger?: SandboxLogger) =>
    new DockerSandboxProvider({ stateDir, host: docker.host, image, logger });
  const spec = (session: string) => ({
    metadata: { userId: 'mallory', sessionId: session, deployment: 'docker-mount' },
    hostWorkingDirectory: userFolder(usersRoot, 'mallory', 'app'),
  });
  const containersOf = (session: string) =>
    [...docker.containers.values()].filter(
      (c) => c.config.Labels?.['agent-backend.session'] === session,
    );

  it('refuses a container whose folder was swapped between the check and the mount', async () => {
    swapBeforeMount = true;
    await expect(provider().create(spec('at-create'))).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining('/workspace is no longer the directory this run was given'),
    });
    // Stopped before anything of the sandbox ran in it.
    expect(containersOf('at-create').map((c) => c.running)).toEqual([false]);
    putBack();
    expectVictimUntouched();
  });

  it('refuses a start it cannot verify (no stat in the image), saying why', async () => {
    await expect(provider('sandbox:no-stat').create(spec('no-stat'))).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(
        /^cannot verify the mount of \/workspace in the container \(`stat` exited with 127: .*executable file not found/,
      ),
    });
    expect(containersOf('no-stat').map((c) => c.running)).toEqual([false]);
    expectVictimUntouched();
  });

  it('keeps the refusal when the engine will not stop the container, and logs that', async () => {
    const warned: Array<Record<string, unknown>> = [];
    const logger = { warn: (fields: Record<string, unknown>) => void warned.push(fields) };
    swapBeforeMount = true;
    refuseStop = true;
    await expect(
      provider('sandbox:test', logger).create(spec('stop-refused')),
    ).rejects.toMatchObject({
      code: 'unavailable',
      message: expect.stringContaining('/workspace is no longer the directory this run was given'),
    });
    const [container] = containersOf('stop-refused');
    expect(warned).toEqual([
      {
        code: 'sandbox_stop_failed',
        sandboxId: container!.name,
        err: expect.stringContaining('driver failed stopping container'),
      },
    ]);
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
});
