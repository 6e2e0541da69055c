/**
 * What a benchmark holding tens of thousands of loopback connections needs from the machine:
 * more source addresses than 127.0.0.1 (each source address has only the ephemeral port range,
 * about 28,000 ports, towards one server port) and a file-descriptor limit above the number of
 * sockets each process holds.
 */
import { readFileSync } from 'node:fs';

/** Connections one source address is given: below the default ephemeral range (32768-60999). */
const PER_SOURCE_ADDRESS = 25_000;

/**
 * The loopback source addresses for `connections` clients: none (the kernel picks 127.0.0.1)
 * when one address is enough, else 127.0.0.2 and up, which Linux routes to loopback like
 * 127.0.0.1. `count` overrides the number of addresses.
 */
export function sourceAddresses(connections: number, count?: number): string[] {
  const n = count ?? Math.ceil(connections / PER_SOURCE_ADDRESS);
  if (n <= 1) return [];
  if (n > 250) throw new RangeError(`at most 250 source addresses, asked for ${n}`);
  return Array.from({ length: n }, (_, i) => `127.0.0.${i + 2}`);
}

/** This process's open-file limits (`ulimit -Sn`, `ulimit -Hn`), from /proc/self/limits. */
export function fileLimits(): { soft: number; hard: number } {
  const line = /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  const value = (s: string | undefined) =>
    s === undefined || s === 'unlimited' ? Infinity : Number(s);
  return { soft: value(line?.[1]), hard: value(line?.[2]) };
}

/**
 * The command and arguments that run `command args` with at least `needed` open files: as is
 * when the soft limit allows it; through `sh -c 'ulimit -n …; exec …'` when only the hard limit
 * does (the pid stays the same, and so does an IPC channel). Throws, saying what to raise, when
 * the hard limit is too low: raising it needs root with CAP_SYS_RESOURCE (`ulimit -Hn`,
 * `prlimit`, systemd `LimitNOFILE`, `docker run --ulimit nofile=…`).
 */
export function withFileLimit(
  needed: number,
  command: string,
  args: string[],
  what: string,
): [string, string[]] {
  const { soft, hard } = fileLimits();
  if (needed <= soft) return [command, args];
  if (needed > hard) {
    throw new Error(
      `${what} needs ${needed} open files, above this shell's hard limit of ${hard} ` +
        `(ulimit -Hn); raise it first (as root with CAP_SYS_RESOURCE: ulimit -Hn ${needed}, or ` +
        `prlimit --nofile=${needed}:${needed} --pid $$), or use fewer connections per process`,
    );
  }
  return ['sh', ['-c', `ulimit -n ${needed} && exec "$@"`, 'sh', command, ...args]];
}
