import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import {
  lstat,
  mkdir,
  open,
  opendir,
  rm,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { join, posix } from 'node:path';
import { pythonMain } from '../python-prelude.js';
import { ImageBudget } from '../image-budget.js';
import { listingOf } from '../listing.js';
import {
  LIST_SCAN_FACTOR,
  SandboxError,
  type CodeLanguage,
  type ExecImage,
  type SandboxFileEntry,
  type SandboxHandle,
} from '../sandbox.js';
import { type Mount } from './host-path.js';
import { isEntryName, openChildDir, openDirNoFollow, viaFd } from './no-follow.js';

/**
 * What local sandboxes (bubblewrap, Docker) share: the sandbox's files are host directories
 * mounted into it (the working directory at `/workspace`, its own `/tmp`), so the file tools and
 * the figures of `execute_code` are handled on the host side; only running a process differs
 * between runtimes. Everything in those directories is the sandbox's to change, at any moment
 * (another session of the same user may run code on a parent of the working directory meanwhile),
 * so the host never follows a path through them: it opens component by component with no-follow
 * semantics ({@link openDirNoFollow}) and checks what it opened.
 */

/**
 * Where the code files of a call are, inside the sandbox: a host directory of the service's own
 * (`<state>/<id>/code`), mounted read-only, so the host writes them where the sandbox cannot
 * plant a link.
 */
export const LOCAL_CODE_DIR = '/opt/code';
/** Where figures are collected, inside the sandbox (under its own `/tmp`). */
export const LOCAL_OUTPUTS_DIR = '/tmp/outputs';

const { O_RDONLY, O_WRONLY, O_CREAT, O_TRUNC, O_NOFOLLOW, O_NONBLOCK } = constants;

/**
 * The file tools on host-mounted directories. Each mount's `host` is a real path (no link in
 * it) taken when the sandbox was made or reconnected; it is reopened with no-follow on every
 * call, so a directory swapped for a link since (a working directory replaced by a link to
 * another user's) is refused, never followed. Below it every component is entered with
 * no-follow too: the tools follow no link at all (code inside the sandbox does, within its own
 * view). Errors name sandbox paths only.
 */
export function hostFiles(
  mounts: readonly Mount[],
  workdir: string,
): Pick<SandboxHandle, 'writeFile' | 'readFile' | 'listFiles'> {
  /** The mount holding `path` and the entry names below its root. */
  const locate = (path: string): { mount: Mount; parts: string[] } => {
    const inside = posix.resolve(workdir, path);
    for (const mount of mounts) {
      if (inside === mount.inside || inside.startsWith(`${mount.inside}/`)) {
        return { mount, parts: inside.slice(mount.inside.length).split('/').filter(Boolean) };
      }
    }
    throw new SandboxError(
      'path_outside',
      `${path} is outside the sandbox's files (${mounts.map((m) => m.inside).join(', ')})`,
    );
  };
  /**
   * The directory `parts` below the mount's root, each component entered with no-follow (made
   * first when `create`); the caller closes it.
   */
  const openDir = async (
    path: string,
    mount: Mount,
    parts: readonly string[],
    create: boolean,
  ): Promise<FileHandle> => {
    let dir: FileHandle;
    try {
      dir = await openDirNoFollow(mount.host);
    } catch (error) {
      throw new SandboxError(
        'unavailable',
        `${mount.inside} is no longer the sandbox's directory (it was moved, removed or replaced ` +
          `by a link), so ${path} cannot be reached`,
        { cause: error },
      );
    }
    try {
      for (const part of parts) {
        if (create) {
          await mkdir(viaFd(dir, part)).catch((error: NodeJS.ErrnoException) => {
            if (error.code !== 'EEXIST') throw error;
          });
        }
        const next = await openChildDir(dir, part);
        await dir.close();
        dir = next;
      }
      return dir;
    } catch (error) {
      await dir.close();
      throw fsError(path, error);
    }
  };
  return {
    async writeFile(path, data) {
      const { mount, parts } = locate(path);
      const name = parts.pop();
      if (name === undefined) throw new SandboxError('not_found', `${path} is a directory`);
      const dir = await openDir(path, mount, parts, true);
      try {
        const file = await open(
          viaFd(dir, name),
          O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK,
        ).catch((error: unknown) => {
          throw fsError(path, error);
        });
        try {
          if (!(await file.stat()).isFile()) {
            throw new SandboxError('not_found', `${path} is not a regular file`);
          }
          await file.writeFile(data);
        } finally {
          await file.close();
        }
      } finally {
        await dir.close();
      }
    },
    async readFile(path, maxBytes) {
      const { mount, parts } = locate(path);
      const name = parts.pop();
      if (name === undefined) throw new SandboxError('not_found', `${path} is not a file`);
      const dir = await openDir(path, mount, parts, false);
      try {
        // O_NONBLOCK: a FIFO planted under the name does not hold the call.
        const file = await open(viaFd(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(
          (error: unknown) => {
            throw fsError(path, error);
          },
        );
        try {
          const info = await file.stat();
          if (!info.isFile()) throw new SandboxError('not_found', `${path} is not a file`);
          const data = Buffer.alloc(Math.min(info.size, maxBytes));
          const { bytesRead } = await file.read(data, 0, data.length, 0);
          return { data: data.subarray(0, bytesRead), truncated: info.size > maxBytes };
        } finally {
          await file.close();
        }
      } finally {
        await dir.close();
      }
    },
    async listFiles(path, depth, options = {}) {
      const { mount, parts } = locate(path);
      const dir = await openDir(path, mount, parts, false);
      const limit = options.limit ?? Infinity;
      const walk: Walk = {
        entries: [],
        limit,
        looks: limit * LIST_SCAN_FACTOR,
        cut: false,
        signal: options.signal,
      };
      try {
        await listTree(walk, dir, '', depth);
        return listingOf(walk.entries, walk.cut);
      } catch (error) {
        throw fsError(path, error);
      } finally {
        await dir.close();
      }
    },
  };
}

/**
 * Writes the code of one `execute_code` call into `codeDir`, the service's own host directory
 * that the sandbox sees read-only at {@link LOCAL_CODE_DIR} (never a directory the sandbox can
 * write: it could have made it a link), and says what to run inside: python with the figure
 * prelude, `node`, or bash.
 */
export async function prepareCode(
  codeDir: string,
  language: CodeLanguage,
  code: string,
  node: string,
): Promise<{ argv: string[]; cleanup: () => Promise<void> }> {
  const name = randomUUID();
  const files: string[] = [];
  const put = async (file: string, text: string) => {
    files.push(join(codeDir, file));
    try {
      await mkdir(codeDir, { recursive: true });
      await writeFile(join(codeDir, file), text);
    } catch (error) {
      // The host's error names the host path: the tool says what failed, not where.
      throw new SandboxError(
        'unavailable',
        `could not write the code file (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        { cause: error },
      );
    }
    return posix.join(LOCAL_CODE_DIR, file);
  };
  let argv: string[];
  if (language === 'python') {
    const file = await put(`${name}.py`, code);
    const main = await put(`${name}-main.py`, pythonMain(LOCAL_OUTPUTS_DIR, file));
    // The outputs directory is made inside, by the sandbox's own user: the host makes nothing
    // under the sandbox's /tmp.
    argv = ['/bin/sh', '-c', `mkdir -p ${LOCAL_OUTPUTS_DIR} 2>/dev/null; exec python3 "$0"`, main];
  } else if (language === 'javascript') {
    argv = [node, await put(`${name}.mjs`, code)];
  } else {
    argv = ['/bin/bash', await put(`${name}.sh`, code)];
  }
  return {
    argv,
    cleanup: async () => {
      for (const file of files) await rm(file, { force: true });
    },
  };
}

/** An error of the file system as the tool says it: with the sandbox's path, never the host's. */
function fsError(path: string, error: unknown): SandboxError {
  if (error instanceof SandboxError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new SandboxError('not_found', `${path} does not exist`);
  if (code === 'ENOTDIR')
    return new SandboxError('not_found', `a parent of ${path} is not a directory`);
  if (code === 'ELOOP') {
    return new SandboxError('path_outside', `${path} goes through a symbolic link (not followed)`);
  }
  if (code === 'EISDIR') return new SandboxError('not_found', `${path} is a directory`);
  return new SandboxError('provider_error', `${path}: ${code ?? 'file system error'}`, {
    cause: error,
  });
}

/** One listing's walk: what it found and what it may still look at. */
interface Walk {
  readonly entries: SandboxFileEntry[];
  /** Entries it may still list. */
  readonly limit: number;
  /** Directory entries it may still look at, listed or not. */
  looks: number;
  cut: boolean;
  readonly signal: AbortSignal | undefined;
}

/**
 * Adds the entries under `dir`, `depth` levels deep, to `walk`, each directory entered with
 * no-follow and read as a stream, until the walk's limit: then it is `cut` and nothing more is
 * read. Answers false once the walk is over.
 */
async function listTree(
  walk: Walk,
  dir: FileHandle,
  prefix: string,
  depth: number,
): Promise<boolean> {
  for await (const entry of await opendir(viaFd(dir))) {
    if (walk.signal?.aborted || walk.looks-- <= 0) {
      walk.cut = true;
      return false;
    }
    if (!isEntryName(entry.name) || !(entry.isDirectory() || entry.isFile())) continue;
    if (walk.entries.length >= walk.limit) {
      walk.cut = true;
      return false;
    }
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      walk.entries.push({ path, type: 'directory' });
      if (depth <= 1) continue;
      // Replaced by a link since it was listed: skipped.
      const child = await openChildDir(dir, entry.name).catch(() => undefined);
      if (!child) continue;
      try {
        if (!(await listTree(walk, child, path, depth - 1))) return false;
      } finally {
        await child.close();
      }
    } else {
      const info = await lstat(viaFd(dir, entry.name)).catch(() => undefined);
      if (info?.isFile()) walk.entries.push({ path, type: 'file', size: info.size });
    }
  }
  return true;
}

/**
 * PNG names {@link collectImages} keeps to sort and read; further ones are removed unread as it
 * comes to them (the code can make millions of files, and the host holds none of their names).
 */
export const MAX_OUTPUT_NAMES = 10_000;

/**
 * The PNGs in `<tmp>/outputs` (`tmp`: the host directory mounted at the sandbox's `/tmp`, a real
 * path), by name, removed once looked at, within the limits of one call ({@link ImageBudget}):
 * each file's size is taken before it is read, and a file that does not fit is removed unread.
 * Neither the outputs directory nor a file in it is followed when it is a link (the sandbox could
 * point them at any host file or folder); only regular files on the outputs directory's own file
 * system are read.
 */
export async function collectImages(
  tmp: string,
): Promise<{ images: ExecImage[]; imagesLeftOut: number }> {
  let dir: FileHandle;
  try {
    const root = await openDirNoFollow(tmp);
    try {
      dir = await openChildDir(root, 'outputs');
    } finally {
      await root.close();
    }
  } catch {
    return { images: [], imagesLeftOut: 0 };
  }
  const budget = new ImageBudget();
  try {
    const device = (await dir.stat()).dev;
    const names: string[] = [];
    // A stream of the entries, never the whole list at once.
    for await (const entry of await opendir(viaFd(dir))) {
      const name = entry.name;
      if (!isEntryName(name) || !name.toLowerCase().endsWith('.png')) continue;
      if (names.length < MAX_OUTPUT_NAMES) {
        names.push(name);
        continue;
      }
      budget.skip();
      await unlink(viaFd(dir, name)).catch(() => undefined);
    }
    names.sort();
    for (const name of names) {
      // A link, a folder, a FIFO, a file elsewhere: never read, counted as left out.
      await readImage(dir, name, device, budget).catch(() => budget.skip());
      // unlink does not follow the last component: a link is removed, not its target.
      await unlink(viaFd(dir, name)).catch(() => undefined);
    }
  } finally {
    await dir.close();
  }
  return { images: budget.images, imagesLeftOut: budget.leftOut };
}

/** Offers one output file to `budget`: a regular file is read up to its room, never past it. */
async function readImage(
  dir: FileHandle,
  name: string,
  device: number,
  budget: ImageBudget,
): Promise<void> {
  const file = await open(viaFd(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const info = await file.stat();
    if (!info.isFile() || info.dev !== device) return budget.skip();
    const room = budget.room();
    if (info.size > room) return budget.skip();
    // One byte more than its size: a file still growing or shrinking (code left running) is
    // left out.
    const data = Buffer.alloc(info.size + 1);
    const { bytesRead } = await file.read(data, 0, data.length, 0);
    budget.take(data.subarray(0, bytesRead), bytesRead === info.size);
  } finally {
    await file.close();
  }
}
