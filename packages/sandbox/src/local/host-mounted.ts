import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import {
  lstat,
  mkdir,
  open,
  readdir,
  rm,
  unlink,
  writeFile,
  type FileHandle,
} from 'node:fs/promises';
import { join, posix } from 'node:path';
import { pythonMain } from '../python-prelude.js';
import {
  MAX_IMAGE_BYTES,
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
    async listFiles(path, depth) {
      const { mount, parts } = locate(path);
      const dir = await openDir(path, mount, parts, false);
      try {
        return (await listTree(dir, '', depth)).sort((a, b) => a.path.localeCompare(b.path));
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

/** The entries under `dir`, `depth` levels deep, each directory entered with no-follow. */
async function listTree(
  dir: FileHandle,
  prefix: string,
  depth: number,
): Promise<SandboxFileEntry[]> {
  const entries: SandboxFileEntry[] = [];
  for (const entry of await readdir(viaFd(dir), { withFileTypes: true })) {
    if (!isEntryName(entry.name)) continue;
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      entries.push({ path, type: 'directory' });
      if (depth <= 1) continue;
      // Replaced by a link since it was listed: skipped.
      const child = await openChildDir(dir, entry.name).catch(() => undefined);
      if (!child) continue;
      try {
        entries.push(...(await listTree(child, path, depth - 1)));
      } finally {
        await child.close();
      }
    } else if (entry.isFile()) {
      const info = await lstat(viaFd(dir, entry.name)).catch(() => undefined);
      if (info?.isFile()) entries.push({ path, type: 'file', size: info.size });
    }
  }
  return entries;
}

/**
 * The PNGs in `<tmp>/outputs` (`tmp`: the host directory mounted at the sandbox's `/tmp`, a real
 * path), oldest first, removed once read. Neither the outputs directory nor a file in it is
 * followed when it is a link (the sandbox could point them at any host file or folder); only
 * regular files on the outputs directory's own file system are read.
 */
export async function collectImages(tmp: string): Promise<ExecImage[]> {
  let dir: FileHandle;
  try {
    const root = await openDirNoFollow(tmp);
    try {
      dir = await openChildDir(root, 'outputs');
    } finally {
      await root.close();
    }
  } catch {
    return [];
  }
  const images: ExecImage[] = [];
  try {
    const device = (await dir.stat()).dev;
    const names = (await readdir(viaFd(dir)))
      .filter((name) => isEntryName(name) && name.toLowerCase().endsWith('.png'))
      .sort();
    for (const name of names) {
      const image = await readImage(dir, name, device).catch(() => undefined);
      if (image) images.push(image);
      // unlink does not follow the last component: a link is removed, not its target.
      await unlink(viaFd(dir, name)).catch(() => undefined);
    }
  } finally {
    await dir.close();
  }
  return images;
}

async function readImage(
  dir: FileHandle,
  name: string,
  device: number,
): Promise<ExecImage | undefined> {
  const file = await open(viaFd(dir, name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const info = await file.stat();
    if (!info.isFile() || info.dev !== device || info.size > MAX_IMAGE_BYTES) return undefined;
    const data = Buffer.alloc(info.size);
    const { bytesRead } = await file.read(data, 0, data.length, 0);
    return { data: data.subarray(0, bytesRead).toString('base64'), mimeType: 'image/png' };
  } finally {
    await file.close();
  }
}
