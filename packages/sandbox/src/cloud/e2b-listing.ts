import { posix } from 'node:path';
import type { Sandbox } from 'e2b';
import { ImageBudget } from '../image-budget.js';
import { listingOf } from '../listing.js';
import {
  SandboxError,
  type ExecImage,
  type ExecOptions,
  type ExecResult,
  type ListOptions,
  type SandboxFileEntry,
  type SandboxFileListing,
} from '../sandbox.js';
import { runCommand } from './e2b-command.js';
import { providerCall } from './e2b-sdk.js';

/**
 * The most a listing command (`list_files`, the figures of a call) may print: its entries are
 * read from it, never from E2B's own listing, which answers a whole tree in one message.
 */
const LISTING_OUTPUT_BYTES = 4 * 1024 * 1024;
/** Figure names one call's listing answers at most (sorted in the sandbox); the rest are left out. */
const MAX_OUTPUT_NAMES = 1_000;
/** The deadline of a listing command when the caller gives none. */
const LISTING_TIMEOUT_MS = 60_000;
/** The exit status of a listing command whose directory is not there. */
const NOT_A_DIRECTORY = 66;

/**
 * The entries under `at` (a path inside the sandbox; `path` as the caller named it), `depth`
 * levels deep, found by `find` in the sandbox: NUL-separated (any name survives, newlines
 * included), no links, and `head` stops it at the limit and one more, so the walk ends there.
 */
export async function listFiles(
  sandbox: Sandbox,
  at: string,
  path: string,
  depth: number,
  options: ListOptions,
): Promise<SandboxFileListing> {
  const limit = options.limit;
  const result = await runCommand(
    sandbox,
    `cd -- ${shellQuote(at)} 2>/dev/null || exit ${NOT_A_DIRECTORY}\n` +
      `find . -mindepth 1 -maxdepth ${depth} \\( -type d -printf 'd %s %P\\0' \\) ` +
      `-o \\( -type f -printf 'f %s %P\\0' \\)` +
      (limit === undefined ? '' : ` | head -z -n ${limit + 1}`),
    {
      timeoutMs: options.timeoutMs ?? LISTING_TIMEOUT_MS,
      maxOutputBytes: LISTING_OUTPUT_BYTES,
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  if (result.exitCode === NOT_A_DIRECTORY) {
    throw new SandboxError('not_found', `${path} is not a directory`);
  }
  const { records, complete } = nulRecords(result);
  const entries: SandboxFileEntry[] = [];
  for (const record of records) {
    const match = /^([df]) (\d+) ([\s\S]+)$/.exec(record);
    if (!match) continue;
    const [, type, size, relative] = match as unknown as [string, string, string, string];
    entries.push(
      type === 'd'
        ? { path: relative, type: 'directory' }
        : { path: relative, type: 'file', size: Number(size) },
    );
  }
  const cut = !complete || (limit !== undefined && entries.length > limit);
  return listingOf(limit === undefined ? entries : entries.slice(0, limit), cut);
}

/**
 * The PNGs the python prelude (or the code) saved, by name, within the limits of one call
 * ({@link ImageBudget}): the sizes come from a listing command (sorted in the sandbox, at most
 * {@link MAX_OUTPUT_NAMES} names), a file that does not fit is never downloaded, and each
 * download is read as a stream that stops at the room the file was given, so a file that grew
 * since it was listed costs no more. The directory is removed after.
 */
export async function collectImages(
  sandbox: Sandbox,
  dir: string,
  options: ExecOptions,
): Promise<{ images: ExecImage[]; imagesLeftOut: number }> {
  const pngs = `find . -mindepth 1 -maxdepth 1 -type f -iname '*.png'`;
  const listing = await runCommand(
    sandbox,
    `cd ${dir} 2>/dev/null || exit 0\n` +
      `${pngs} -printf . | wc -c\n` +
      `${pngs} -printf '%s %f\\0' | LC_ALL=C sort -z -k 2 | head -z -n ${MAX_OUTPUT_NAMES}`,
    { ...options, maxOutputBytes: LISTING_OUTPUT_BYTES },
  ).catch(() => undefined);
  const budget = new ImageBudget();
  if (listing) {
    const newline = listing.stdout.indexOf('\n');
    const total = Number(listing.stdout.slice(0, newline));
    const { records } = nulRecords({ ...listing, stdout: listing.stdout.slice(newline + 1) });
    let offered = 0;
    for (const record of records) {
      const match = /^(\d+) ([\s\S]+)$/.exec(record);
      if (!match) continue;
      offered += 1;
      const room = budget.room();
      if (Number(match[1]) > room) {
        budget.skip();
        continue;
      }
      const stream = await providerCall('read a figure', () =>
        sandbox.files.read(posix.join(dir, match[2]!), { format: 'stream' }),
      ).catch(() => undefined);
      const data = stream && (await readAtMost(stream, room).catch(() => undefined));
      if (data) budget.take(data);
      else budget.skip();
    }
    if (Number.isSafeInteger(total)) budget.leftOut += Math.max(0, total - offered);
  }
  await sandbox.commands.run(`rm -rf ${dir}`).catch(() => undefined);
  return { images: budget.images, imagesLeftOut: budget.leftOut };
}

/**
 * The NUL-terminated records a listing command printed; `complete` is false when its output was
 * cut (at its cap, deadline or a cancel), and then the last, partial record is dropped.
 */
function nulRecords(result: Omit<ExecResult, 'images'>): { records: string[]; complete: boolean } {
  const records = result.stdout.split('\0');
  // The text after the last NUL: empty when the output ended with a whole record.
  const rest = records.pop();
  return {
    records,
    complete: !result.truncated && !result.timedOut && result.exitCode !== null && rest === '',
  };
}

/** `text` as one word of a POSIX shell command line. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The first `maxBytes` of a stream and at most one chunk more (so a longer stream shows as
 * longer than `maxBytes`); the rest is cancelled, never crossing the network.
 */
export async function readAtMost(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  try {
    while (size <= maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(chunks, size);
}
