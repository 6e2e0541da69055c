import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { SandboxError } from '../sandbox.js';

/**
 * Opening files of a sandbox's tree from the host without following a link the sandbox could
 * have made (docs/sandbox.md, "What the host never does"). Node has no `openat`, so a descriptor's
 * directory is named through Linux's `/proc/self/fd/<n>`: the kernel goes to the very directory
 * the descriptor holds (not to a path looked up again), and only the last component is looked
 * up, here with `O_NOFOLLOW`. Chaining these opens walks a path component by component with no
 * window in which a swapped component could lead elsewhere.
 */

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

/** The path of `handle`'s directory, or of the entry `name` in it, through `/proc/self/fd`. */
export function viaFd(handle: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${handle.fd}` : `/proc/self/fd/${handle.fd}/${name}`;
}

/** Whether `name` is one plain entry name (no `/`, not `.` or `..`). */
export function isEntryName(name: string): boolean {
  return (
    name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes('\0')
  );
}

/**
 * Opens the directory `name` inside `parent`; fails with `ELOOP` when it is a link (Linux says
 * `ENOTDIR` for a link opened with `O_DIRECTORY | O_NOFOLLOW`), `ENOTDIR` when it is a file.
 */
export async function openChildDir(parent: FileHandle, name: string): Promise<FileHandle> {
  if (!isEntryName(name)) throw new Error(`not an entry name: ${JSON.stringify(name)}`);
  try {
    return await open(viaFd(parent, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error;
    const info = await lstat(viaFd(parent, name)).catch(() => undefined);
    if (!info?.isSymbolicLink()) throw error;
    throw Object.assign(new Error(`${name} is a symbolic link`), { code: 'ELOOP' });
  }
}

/**
 * Opens the directory at `dir`, an absolute path with no link in it (a `realpath` taken earlier),
 * following no link on the way: fails (`ELOOP`, `ENOTDIR`, `ENOENT`) when any component has
 * since been replaced by a link or removed, instead of reaching wherever the link points.
 */
export async function openDirNoFollow(dir: string): Promise<FileHandle> {
  let current = await open('/', O_RDONLY | O_DIRECTORY);
  try {
    for (const name of dir.split('/').filter((part) => part !== '')) {
      const next = await openChildDir(current, name);
      await current.close();
      current = next;
    }
    return current;
  } catch (error) {
    await current.close().catch(() => undefined);
    throw error;
  }
}

/** The error text of a call whose directory `inside` is no longer the one it was given. */
export function notTheDirectory(inside: string): string {
  return (
    `${inside} is no longer the directory this run was given (it was moved, removed or ` +
    'replaced by a link): nothing ran; start a new run with its working_directory'
  );
}

/**
 * `dir` when it is a directory reached with no link on the way (the real path the caller
 * resolved and checked, still the same directory), else a `SandboxError` (`unavailable`) naming
 * `inside`, the sandbox's path for it (never the host's).
 */
export async function linkFreeDir(dir: string, inside: string): Promise<string> {
  await (await pinDir(dir, inside)).handle.close();
  return resolve(dir);
}

/**
 * The directory `dir` held open (reached with no link on the way, as {@link linkFreeDir}), and
 * its identity, `<device>:<inode>` as `stat -c %d:%i` prints it: while the handle is open that
 * inode is this directory's, so a mount of `dir` made meanwhile by path can be checked against it.
 */
export async function pinDir(
  dir: string,
  inside: string,
): Promise<{ handle: FileHandle; identity: string }> {
  let handle: FileHandle;
  try {
    handle = await openDirNoFollow(resolve(dir));
  } catch (error) {
    throw new SandboxError('unavailable', notTheDirectory(inside), { cause: error });
  }
  const info = await handle.stat({ bigint: true });
  return { handle, identity: `${info.dev}:${info.ino}` };
}

/**
 * Directories {@link removeTreeNoFollow} holds open at once, besides the top one: a folder
 * deeper than this is moved up into the top folder instead of entered (sandboxed code can nest
 * folders tens of thousands deep, and one descriptor per level would run the whole process out
 * of descriptors).
 */
export const MAX_HELD_DIRS = 32;

/**
 * Removes the entry `name` of `parent` and, when it is a directory, everything in it, following
 * no link: each directory is entered with {@link openChildDir} (a link is never a directory
 * here), each entry removed through its directory's descriptor, and `unlink`/`rmdir` never follow
 * their last component. An entry that changes kind meanwhile (a directory swapped for a link by
 * code still running in the sandbox) is looked at again, never followed; a link is removed as
 * the link it is. Missing entries are not an error. At most {@link MAX_HELD_DIRS} + 2
 * descriptors are held: a directory deeper than that is renamed (through its parent's
 * descriptor, which follows no last component either) into the top directory, `name` itself,
 * whose loop then takes it as one of its own entries.
 */
export async function removeTreeNoFollow(parent: FileHandle, name: string): Promise<void> {
  await removeEntry(parent, name, undefined);
}

/** The removal's top directory, held, and how many directories were moved up into it. */
interface Top {
  readonly handle: FileHandle;
  moved: number;
}

async function removeEntry(
  parent: FileHandle,
  name: string,
  below: { top: Top; depth: number } | undefined,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const info = await lstat(viaFd(parent, name)).catch(ignoreMissing);
    if (!info) return;
    try {
      if (!info.isDirectory()) {
        await unlink(viaFd(parent, name));
        return;
      }
      if (below && below.depth > MAX_HELD_DIRS) {
        await rename(viaFd(parent, name), viaFd(below.top.handle, `.deep-${randomUUID()}`));
        below.top.moved += 1;
        return;
      }
      const dir = await openChildDir(parent, name);
      try {
        if (below) {
          const inside = { top: below.top, depth: below.depth + 1 };
          for (const entry of await readdir(viaFd(dir))) await removeEntry(dir, entry, inside);
        } else {
          // The top: directories moved up from deep below land here, so it is read again
          // until a pass moved none (each pass takes MAX_HELD_DIRS levels off a deep chain).
          const top: Top = { handle: dir, moved: 0 };
          do {
            top.moved = 0;
            for (const entry of await readdir(viaFd(dir))) {
              await removeEntry(dir, entry, { top, depth: 1 });
            }
          } while (top.moved > 0);
        }
      } finally {
        await dir.close();
      }
      await rmdir(viaFd(parent, name));
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      // Swapped between the look and the removal (a directory for a link or a file, a file for
      // a directory, or filled again): look again.
      if (
        attempt < 100 &&
        ['ELOOP', 'ENOTDIR', 'EISDIR', 'ENOTEMPTY', 'EEXIST'].includes(code ?? '')
      ) {
        continue;
      }
      throw error;
    }
  }
}

/**
 * Removes the directory `dir` and everything in it, following no link below it
 * ({@link removeTreeNoFollow}). Its parent is the service's own (a sandbox's state directory's
 * parent, which no sandbox sees), so that path is opened as it is.
 */
export async function removeDirNoFollow(dir: string): Promise<void> {
  const parent = await open(dirname(resolve(dir)), O_RDONLY | O_DIRECTORY).catch(ignoreMissing);
  if (!parent) return;
  try {
    await removeTreeNoFollow(parent, basename(resolve(dir)));
  } finally {
    await parent.close();
  }
}

function ignoreMissing(error: unknown): undefined {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
  throw error;
}
