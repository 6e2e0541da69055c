import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BubblewrapSandboxProvider } from './bwrap-provider.js';
import { exposedInMountinfo, shownInMountinfo } from './mount-source.js';

describe('what a sandbox sees of a bound host folder in mountinfo', () => {
  it('is the path shownInMountinfo predicts, whatever path the folder was named by', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sbx-mountinfo-'));
    const dir = join(root, 'users', 'alice', 'project');
    mkdirSync(dir, { recursive: true });
    const sandbox = await new BubblewrapSandboxProvider({ stateDir: join(root, 'state') }).create({
      metadata: { userId: 'alice', sessionId: 's', deployment: 'mountinfo' },
      hostWorkingDirectory: dir,
    });
    const seen = await sandbox.runCommand('cat /proc/self/mountinfo', {
      timeoutMs: 20_000,
      maxOutputBytes: 64 * 1024,
    });
    const workspace = seen.stdout.split('\n').find((line) => line.split(' ')[4] === '/workspace');
    expect(workspace?.split(' ')[3]).toBe(shownInMountinfo(dir));
    const tmp = seen.stdout.split('\n').find((line) => line.split(' ')[4] === '/tmp');
    expect(tmp?.split(' ')[3]).toBe(shownInMountinfo(join(root, 'state', sandbox.id, 'tmp')));
  });

  it('reads a mount table: the longest mount point holding the folder, its root, octal escapes', () => {
    const root = mkdtempSync(join(tmpdir(), 'sbx-mountinfo-'));
    const dir = join(root, 'a b', 'c');
    mkdirSync(dir, { recursive: true });
    const table = join(root, 'mountinfo');
    const escaped = join(root, 'a b').replaceAll(' ', '\\040');
    writeFileSync(
      table,
      [
        '1 0 254:0 / / rw - ext4 /dev/vda rw',
        `2 1 0:40 /volume/x ${escaped} rw - tmpfs tmpfs rw`,
        `3 1 0:41 / ${root}-other rw - tmpfs tmpfs rw`,
      ].join('\n'),
    );
    expect(shownInMountinfo(dir, table)).toBe('/volume/x/c');
    expect(shownInMountinfo(root, table)).toBe(root);
  });

  it('tells a path inside a volume of its own from a path on a larger file system', () => {
    const root = mkdtempSync(join(tmpdir(), 'sbx-mountinfo-'));
    for (const dir of ['volume/a', 'bound/b', 'plain/c'])
      mkdirSync(join(root, dir), { recursive: true });
    const table = join(root, 'mountinfo');
    writeFileSync(
      table,
      [
        '1 0 254:0 / / rw - ext4 /dev/vda rw',
        // A file system mounted whole: a tmpfs, a disk of its own.
        `2 1 0:40 / ${root}/volume rw - tmpfs tmpfs rw`,
        // A folder of the host's disk bound in (docker run -v /srv/data:<root>/bound).
        `3 1 254:0 /srv/data ${root}/bound rw - ext4 /dev/vda rw`,
      ].join('\n'),
    );
    expect(exposedInMountinfo(join(root, 'volume', 'a'), table)).toBeUndefined();
    // What the sandbox sees is the host's path, not the one the service uses.
    expect(exposedInMountinfo(join(root, 'bound', 'b'), table)).toBe('/srv/data/b');
    expect(exposedInMountinfo(join(root, 'plain', 'c'), table)).toBe(join(root, 'plain', 'c'));
  });
});
