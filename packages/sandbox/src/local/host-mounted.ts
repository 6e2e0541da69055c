import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { pythonMain } from '../python-prelude.js';
import {
  MAX_IMAGE_BYTES,
  SandboxError,
  type CodeLanguage,
  type ExecImage,
  type SandboxFileEntry,
  type SandboxHandle,
} from '../sandbox.js';
import { hostPathOf, type Mount } from './host-path.js';

/**
 * What local sandboxes (bubblewrap, Docker) share: the sandbox's files are host directories
 * mounted into it (the working directory at `/workspace`, its own `/tmp`), so the file tools and
 * the code files and figures of `execute_code` are handled on the host side; only running a
 * process differs between runtimes.
 */

/** Where code files of a call are written (inside the sandbox), and figures collected. */
export const LOCAL_RUN_DIR = '/tmp/.run';
export const LOCAL_OUTPUTS_DIR = '/tmp/outputs';

/** The file tools on host-mounted directories, every path checked by {@link hostPathOf}. */
export function hostFiles(
  mounts: readonly Mount[],
  workdir: string,
): Pick<SandboxHandle, 'writeFile' | 'readFile' | 'listFiles'> {
  const toHost = (path: string) => hostPathOf(path, workdir, mounts);
  return {
    async writeFile(path, data) {
      const host = toHost(path);
      await mkdir(dirname(host), { recursive: true });
      // Re-checked after creating the parents: a symlink may have been planted meanwhile.
      toHost(path);
      await writeFile(host, data, { flag: 'w' });
    },
    async readFile(path, maxBytes) {
      const host = toHost(path);
      let file;
      try {
        file = await open(host, 'r');
      } catch (error) {
        throw notFound(path, error);
      }
      try {
        const info = await file.stat();
        if (!info.isFile()) throw new SandboxError('not_found', `${path} is not a file`);
        const data = Buffer.alloc(Math.min(info.size, maxBytes));
        const { bytesRead } = await file.read(data, 0, data.length, 0);
        return { data: data.subarray(0, bytesRead), truncated: info.size > maxBytes };
      } finally {
        await file.close();
      }
    },
    async listFiles(path, depth) {
      const host = toHost(path);
      let info;
      try {
        info = await stat(host);
      } catch (error) {
        throw notFound(path, error);
      }
      if (!info.isDirectory()) throw new SandboxError('not_found', `${path} is not a directory`);
      return listTree(host, '', depth);
    },
  };
}

/**
 * Writes the code of one `execute_code` call into the sandbox's `/tmp/.run` (on the host side)
 * and says what to run inside: python with the figure prelude, `node`, or bash.
 */
export async function prepareCode(
  tmp: string,
  language: CodeLanguage,
  code: string,
  node: string,
): Promise<{ argv: string[]; cleanup: () => Promise<void> }> {
  const name = randomUUID();
  const runDir = join(tmp, '.run');
  await mkdir(runDir, { recursive: true });
  await mkdir(join(tmp, 'outputs'), { recursive: true });
  const files: string[] = [];
  const put = async (file: string, text: string) => {
    files.push(join(runDir, file));
    await writeFile(join(runDir, file), text);
    return posix.join(LOCAL_RUN_DIR, file);
  };
  let argv: string[];
  if (language === 'python') {
    const file = await put(`${name}.py`, code);
    argv = ['python3', await put(`${name}-main.py`, pythonMain(LOCAL_OUTPUTS_DIR, file))];
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

function notFound(path: string, error: unknown): SandboxError {
  if (error instanceof SandboxError) return error;
  return new SandboxError('not_found', `${path} does not exist`, { cause: error });
}

async function listTree(root: string, prefix: string, depth: number): Promise<SandboxFileEntry[]> {
  const entries: SandboxFileEntry[] = [];
  for (const entry of await readdir(join(root, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      entries.push({ path, type: 'directory' });
      if (depth > 1) entries.push(...(await listTree(root, path, depth - 1)));
    } else if (entry.isFile()) {
      entries.push({ path, type: 'file', size: statSync(join(root, path)).size });
    }
  }
  return entries.sort((a, b) => a.path.localeCompare(b.path));
}

/** The PNGs in the outputs directory, oldest first, removed once read. */
export async function collectImages(dir: string): Promise<ExecImage[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((name) => name.toLowerCase().endsWith('.png')).sort();
  } catch {
    return [];
  }
  const images: ExecImage[] = [];
  for (const name of names) {
    const path = join(dir, name);
    const info = await stat(path);
    if (info.isFile() && info.size <= MAX_IMAGE_BYTES) {
      images.push({ data: (await readFile(path)).toString('base64'), mimeType: 'image/png' });
    }
    await rm(path, { force: true });
  }
  return images;
}
