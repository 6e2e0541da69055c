const BLOCK = 512;

/** An entry's path in a ustar header: `prefix/name`, without a leading slash. */
function entryPath(header: Uint8Array): string {
  const text = (from: number, length: number) =>
    new TextDecoder().decode(header.subarray(from, from + length)).replace(/\0.*$/s, '');
  const name = text(0, 100);
  const prefix = text(345, 155);
  return (prefix ? `${prefix}/${name}` : name).replace(/^\/+/, '');
}

/**
 * A copy of a (ustar) tar archive without the entries whose path is in `paths` (relative to the
 * archive's root, e.g. `pglite.pid`). Used on PGlite's data-directory dump, which is a plain
 * ustar archive of regular files and directories.
 */
export function tarWithout(tar: Uint8Array, paths: ReadonlySet<string>): Uint8Array {
  const kept: Uint8Array[] = [];
  let offset = 0;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) break; // end-of-archive blocks
    const sizeField = new TextDecoder().decode(header.subarray(124, 136)).replace(/[\0 ]+$/g, '');
    const size = Number.parseInt(sizeField || '0', 8);
    const end = offset + BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    if (!paths.has(entryPath(header))) kept.push(tar.subarray(offset, end));
    offset = end;
  }
  kept.push(new Uint8Array(2 * BLOCK));
  const out = new Uint8Array(kept.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of kept) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
