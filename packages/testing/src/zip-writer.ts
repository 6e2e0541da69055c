import { crc32, deflateRawSync } from 'node:zlib';

/** One entry of a test archive; the fields past `data` forge what a hostile archive could. */
export interface ZipEntrySpec {
  /** Stored as given, `..`, absolute paths and backslashes included. */
  readonly name: string;
  readonly data?: Uint8Array | string;
  /** @default 'deflate' */
  readonly method?: 'store' | 'deflate';
  /** The uncompressed size written in the headers; @default the real size. */
  readonly declaredSize?: number;
  /** Unix mode bits (`0o120777` for a symbolic link). @default 0o100644 */
  readonly mode?: number;
  /** The compression method written in the headers, when not the one used. */
  readonly methodCode?: number;
  /** Sets the "encrypted" flag (the data stays plain). */
  readonly encrypted?: boolean;
}

/**
 * Writes a zip archive byte by byte (local headers, central directory, end record), so tests
 * can build the archives real tools refuse to make: zip-slip names, symbolic links, sizes that
 * lie. Only for tests.
 */
export function writeZip(entries: readonly ZipEntrySpec[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const raw = Buffer.from(entry.data ?? '');
    const body = entry.method === 'store' ? raw : deflateRawSync(raw);
    const method = entry.methodCode ?? (entry.method === 'store' ? 0 : 8);
    const name = Buffer.from(entry.name, 'utf8');
    const flags = 0x800 | (entry.encrypted ? 1 : 0);
    const size = entry.declaredSize ?? raw.length;
    const crc = crc32(raw);

    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix: the mode is in the external attributes
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(((entry.mode ?? 0o100644) << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A minimal valid SKILL.md. */
export function skillMarkdown(name: string, description = `Does ${name} things.`): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n\n# ${name}\n\nStep one, then two.\n`;
}
