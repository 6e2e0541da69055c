import { open } from 'node:fs/promises';

/**
 * The few bytes of POSIX tar (ustar, with a pax `path` record for names that do not fit) that an
 * export needs: regular files only, written one after the other as a stream. Every tar reader
 * (GNU tar, bsdtar, 7-Zip, Python's tarfile) reads it.
 */
const BLOCK = 512;
const encoder = new TextEncoder();

/** A field of `width` bytes holding `value` in octal, NUL-terminated. */
function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mtime: Date, type: '0' | 'x'): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, 'utf8');
  block.write(octal(0o644, 8), 100, 'ascii');
  block.write(octal(0, 8), 108, 'ascii');
  block.write(octal(0, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(Math.floor(mtime.getTime() / 1000), 12), 136, 'ascii');
  block.write('        ', 148, 'ascii'); // the checksum counts its own field as spaces
  block.write(type, 156, 'ascii');
  block.write('ustar\0', 257, 'ascii');
  block.write('00', 263, 'ascii');
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(octal(sum, 7) + ' ', 148, 'ascii');
  return block;
}

/** Zero bytes up to the next block boundary after `size` bytes of content. */
function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** A pax record `"<length> path=<name>\n"`, whose length counts its own digits. */
function paxPath(name: string): Buffer {
  const body = ` path=${name}\n`;
  const bodyBytes = encoder.encode(body).length;
  let length = bodyBytes + String(bodyBytes).length;
  if (String(length).length !== String(bodyBytes).length) length += 1;
  return Buffer.from(`${length}${body}`, 'utf8');
}

/** The header blocks of one file: a pax record first when the name is long or not ASCII. */
function headers(name: string, size: number, mtime: Date): Buffer[] {
  if (name.length <= 100 && /^[\x20-\x7e]*$/.test(name)) return [header(name, size, mtime, '0')];
  const pax = paxPath(name);
  const short = `PaxHeaders/${name.replace(/[^\x20-\x7e]/g, '_').slice(-80)}`;
  return [
    header(short, pax.length, mtime, 'x'),
    pax,
    padding(pax.length),
    header(short, size, mtime, '0'),
  ];
}

/** One file of the archive from bytes in memory. */
export function* tarEntry(
  name: string,
  content: Uint8Array,
  mtime = new Date(),
): Generator<Buffer> {
  yield* headers(name, content.length, mtime);
  yield Buffer.from(content.buffer, content.byteOffset, content.length);
  yield padding(content.length);
}

/** One file of the archive read from `path` in pieces (a kind's JSON lines, spooled to disk). */
export async function* tarFileEntry(
  name: string,
  path: string,
  mtime = new Date(),
): AsyncGenerator<Buffer> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    yield* headers(name, size, mtime);
    const buffer = Buffer.alloc(64 * 1024);
    let offset = 0;
    while (offset < size) {
      const { bytesRead } = await file.read(buffer, 0, buffer.length, offset);
      if (bytesRead === 0) throw new Error(`${path} shrank while it was archived`);
      offset += bytesRead;
      yield Buffer.from(buffer.subarray(0, bytesRead));
    }
    yield padding(size);
  } finally {
    await file.close();
  }
}

/** The end of an archive: two zero blocks. */
export function tarEnd(): Buffer {
  return Buffer.alloc(2 * BLOCK);
}
