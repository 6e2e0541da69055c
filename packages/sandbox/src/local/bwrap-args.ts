import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname, posix } from 'node:path';
import { LOCAL_CODE_DIR } from './host-mounted.js';
import { LOCAL_ENV, LOCAL_WORKDIR } from './local-sandbox.js';

const NODE_PREFIX_INSIDE = '/opt/node';

/** This Node.js as the sandbox sees it: under /usr as it is, elsewhere mounted at /opt/node. */
export const NODE = (() => {
  const binary = realpathSync(process.execPath);
  const prefix = dirname(dirname(binary));
  if (binary.startsWith('/usr/')) return { inside: binary, prefix: undefined };
  return { inside: posix.join(NODE_PREFIX_INSIDE, binary.slice(prefix.length)), prefix };
})();

/**
 * Why this bwrap cannot run calls safely (it lacks an option they rely on: `--bind-fd` and
 * `--size` came with bubblewrap 0.8), or undefined. Asked once per binary.
 */
const bwrapTooOld = new Map<string, string | undefined>();
export function whyBwrapUnusable(bwrap: string): string | undefined {
  if (!bwrapTooOld.has(bwrap)) {
    let help = '';
    try {
      help = execFileSync(bwrap, ['--help'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        bwrapTooOld.set(bwrap, `${bwrap} is not installed (bubblewrap 0.8 or later is needed)`);
        return bwrapTooOld.get(bwrap);
      }
      help = String((error as { stdout?: unknown }).stdout ?? '');
    }
    const missing = ['--bind-fd', '--size', '--args'].filter((option) => !help.includes(option));
    bwrapTooOld.set(
      bwrap,
      missing.length > 0
        ? `bubblewrap 0.8 or later is needed to run code safely (this ${bwrap} lacks ${missing.join(', ')})`
        : undefined,
    );
  }
  return bwrapTooOld.get(bwrap);
}

/**
 * The `/etc` entries code needs (dynamic linker, alternatives, certificates, fonts, matplotlib).
 * Of `/etc/ssl` only the public certificates and OpenSSL's configuration: not `private`, the
 * host's private keys. (The sandbox's uid is mapped to the service's: when the service runs as
 * root, root-only files of whatever is mounted read as the sandbox's own.)
 */
const ETC_ENTRIES = [
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'ssl/certs',
  'ssl/openssl.cnf',
  'ca-certificates',
  'fonts',
  'localtime',
  'mime.types',
  'matplotlibrc',
  'python3',
  'python3.11',
  'python3.12',
];
const ROOT_ENTRIES = ['bin', 'sbin', 'lib', 'lib32', 'lib64'];

/** What one call's bwrap mounts and how it is bounded. */
export interface BwrapCall {
  /** Give code the host's network. */
  readonly network: boolean;
  /** The size of its `/dev/shm`. */
  readonly shmBytes: number;
  /** The real path of the sandbox's `/tmp` on the host. */
  readonly tmp: string;
  /** The descriptor (in bwrap) of the working directory. */
  readonly workspaceFd: number;
  /** The service's directory of the call's code files. */
  readonly codeDir: string;
}

/** bwrap's options for one call. */
export function bwrapArgs(call: BwrapCall): string[] {
  const args = [
    '--unshare-all',
    ...(call.network ? ['--share-net'] : []),
    '--die-with-parent',
    '--new-session',
    '--uid',
    '65534',
    '--gid',
    '65534',
    '--hostname',
    'sandbox',
    '--clearenv',
    ...Object.entries(LOCAL_ENV).flatMap(([name, value]) => ['--setenv', name, value]),
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const entry of ROOT_ENTRIES) {
    const path = `/${entry}`;
    if (!existsSync(path)) continue;
    const info = lstatSync(path);
    if (info.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
    else if (info.isDirectory()) args.push('--ro-bind', path, path);
  }
  for (const entry of ETC_ENTRIES) {
    const path = `/etc/${entry}`;
    if (existsSync(path)) args.push('--ro-bind', path, path);
  }
  args.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    // A RAM disk of the call's own, small, instead of one the size of the host's memory.
    '--size',
    String(call.shmBytes),
    '--tmpfs',
    '/dev/shm',
    '--bind',
    call.tmp,
    '/tmp',
    '--bind-fd',
    String(call.workspaceFd),
    LOCAL_WORKDIR,
    // The code files: the service's own directory, read-only; outside `/tmp` and
    // `/workspace`, so bwrap makes its mount point in its own root, not in a directory the
    // sandbox could have filled with links.
    '--ro-bind',
    call.codeDir,
    LOCAL_CODE_DIR,
    '--chdir',
    LOCAL_WORKDIR,
  );
  // The runtime of `javascript` code: this Node.js. Outside /usr it is mounted at /opt/node
  // (after /tmp, which would hide a Node.js installed under the host's /tmp).
  if (NODE.prefix) args.push('--ro-bind', NODE.prefix, NODE_PREFIX_INSIDE);
  // Last: bwrap's root is a tmpfs in which it made the mount points (`/etc`, `/opt`); read-only,
  // so only the working directory and `/tmp` take writes.
  args.push('--remount-ro', '/');
  return args;
}
