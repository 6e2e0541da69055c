import type { Entry, getFileNameLowLevel, ZipFile } from 'yauzl';
import { SKILL_LIMITS } from './limits.js';
import { resourcePathProblem } from './resource-path.js';
import type { SkillFile, SkillPackage, SkillProblem, SkillResult } from './skill.js';
import { parseSkillMarkdown, SKILL_FILE } from './skill-format.js';

/** Where problems with the archive as a whole are reported. */
const ZIP = 'zip';

/** Files that archivers add and that belong to no skill. */
function isArchiverJunk(path: string): boolean {
  return path.startsWith('__MACOSX/') || path === '.DS_Store' || path.endsWith('/.DS_Store');
}

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const STORED = 0;
const DEFLATED = 8;

interface FileEntry {
  readonly path: string;
  readonly entry: Entry;
}

/**
 * Reads an uploaded zip of one skill folder: `SKILL.md` at the root of the archive, or in its
 * single top-level folder (whose name must then equal the skill's `name`). Bounded before
 * anything is decompressed: archive size, entry count, file count and the declared total size;
 * while decompressing, the bytes actually produced are counted too (an entry whose data
 * inflates past its declared size fails, as yauzl checks every entry's size), so a zip bomb
 * costs at most {@link SKILL_LIMITS}`.totalBytes` of memory. Paths that would leave the
 * folder (`../`, absolute, backslashes), symbolic links and encrypted entries are refused.
 * Nothing is written to disk.
 */
export async function readSkillZip(data: Uint8Array): Promise<SkillResult<SkillPackage>> {
  if (data.byteLength > SKILL_LIMITS.zipBytes) {
    return fail(ZIP, `is larger than ${SKILL_LIMITS.zipBytes} bytes`);
  }
  // Loaded here, not at import: a role that never reads a skill archive never loads yauzl.
  const { default: yauzl } = await import('yauzl');
  let zip: ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(
      Buffer.from(data.buffer, data.byteOffset, data.byteLength),
      { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true },
    );
  } catch (error) {
    return fail(ZIP, `is not a readable zip archive (${(error as Error).message})`);
  }
  try {
    if (zip.entryCount > SKILL_LIMITS.zipEntries) {
      return fail(ZIP, `has ${zip.entryCount} entries; at most ${SKILL_LIMITS.zipEntries}`);
    }
    const listed = await listEntries(zip, yauzl.getFileNameLowLevel);
    if (!listed.ok) return listed;
    return await readEntries(zip, listed.value);
  } catch (error) {
    return fail(ZIP, `could not be read (${(error as Error).message})`);
  } finally {
    zip.close();
  }
}

/** Checks every entry's name and metadata before anything is decompressed. */
async function listEntries(
  zip: ZipFile,
  fileName: typeof getFileNameLowLevel,
): Promise<SkillResult<FileEntry[]>> {
  const problems: SkillProblem[] = [];
  const files: FileEntry[] = [];
  const seen = new Set<string>();
  const folders: string[] = [];
  let declared = 0;
  for await (const entry of zip.eachEntry()) {
    // Decoded here (decodeStrings: false) so that a bad name is reported, not thrown.
    const name = fileName(entry.generalPurposeBitFlag, entry.fileNameRaw, entry.extraFields, false);
    const isDirectory = name.endsWith('/');
    const path = isDirectory ? name.slice(0, -1) : name;
    const unsafe = resourcePathProblem(path);
    if (unsafe) {
      problems.push({ path: printableName(name), message: unsafe });
      continue;
    }
    if (isArchiverJunk(path)) continue;
    if (isDirectory) {
      folders.push(path);
      continue;
    }
    if (seen.has(path)) {
      problems.push({ path, message: 'appears twice in the archive' });
      continue;
    }
    seen.add(path);
    if (((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK) {
      problems.push({ path, message: 'symbolic links are not accepted' });
    } else if (entry.isEncrypted()) {
      problems.push({ path, message: 'encrypted entries are not accepted' });
    } else if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED) {
      problems.push({
        path,
        message: `compression method ${entry.compressionMethod} is not supported (use deflate)`,
      });
    }
    declared += entry.uncompressedSize;
    files.push({ path, entry });
  }
  problems.push(...fileFolderConflicts(seen, folders));
  if (files.length > SKILL_LIMITS.resourceFiles + 1) {
    problems.push({
      path: ZIP,
      message: `has ${files.length} files; at most ${SKILL_LIMITS.resourceFiles} besides ${SKILL_FILE}`,
    });
  }
  if (declared > SKILL_LIMITS.totalBytes) {
    problems.push({
      path: ZIP,
      message: `unpacks to ${declared} bytes; at most ${SKILL_LIMITS.totalBytes}`,
    });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: files };
}

/**
 * Files that the archive also uses as folders: a file `a` beside a file `a/b` or a folder entry
 * `a/`, at any depth and in any order. No folder can hold both, so such a skill could never be
 * written out: copying its files into a sandbox failed every code call of the runs using it.
 */
function fileFolderConflicts(
  files: ReadonlySet<string>,
  folderEntries: readonly string[],
): SkillProblem[] {
  // Each folder the archive implies, with one path inside it to name in the problem.
  const folders = new Map<string, string>();
  const addFolders = (path: string, inside: string) => {
    for (let slash = path.indexOf('/'); slash >= 0; slash = path.indexOf('/', slash + 1)) {
      const folder = path.slice(0, slash);
      if (!folders.has(folder)) folders.set(folder, inside);
    }
  };
  for (const path of files) addFolders(path, path);
  for (const folder of folderEntries) addFolders(`${folder}/`, `${folder}/`);
  const problems: SkillProblem[] = [];
  for (const path of files) {
    const inside = folders.get(path);
    if (inside !== undefined) {
      problems.push({ path, message: `is a file, but "${inside}" uses it as a folder` });
    }
  }
  return problems;
}

/** The folder holding SKILL.md: the archive's root, or its only top-level folder. */
function skillRoot(files: readonly FileEntry[]): { prefix: string; folder?: string } | undefined {
  if (files.some((f) => f.path === SKILL_FILE)) return { prefix: '' };
  const tops = new Set(files.map((f) => f.path.split('/')[0]!));
  const [folder] = tops;
  if (tops.size !== 1 || folder === undefined) return undefined;
  const prefix = `${folder}/`;
  return files.some((f) => f.path === `${prefix}${SKILL_FILE}`) ? { prefix, folder } : undefined;
}

async function readEntries(
  zip: ZipFile,
  files: readonly FileEntry[],
): Promise<SkillResult<SkillPackage>> {
  const root = skillRoot(files);
  if (!root) {
    return fail(
      ZIP,
      `must hold ${SKILL_FILE} at its root or in a single top-level folder (the skill's folder)`,
    );
  }
  const skillEntry = files.find((f) => f.path === `${root.prefix}${SKILL_FILE}`)!;
  if (skillEntry.entry.uncompressedSize > SKILL_LIMITS.skillMdBytes) {
    return fail(SKILL_FILE, `is larger than ${SKILL_LIMITS.skillMdBytes} bytes`);
  }
  const budget = { left: SKILL_LIMITS.totalBytes };
  let skillMd: Buffer | undefined;
  const resources: SkillFile[] = [];
  for (const file of files) {
    let content: Buffer;
    try {
      content = await readEntry(zip, file.entry, budget);
    } catch (error) {
      return fail(file.path, (error as Error).message);
    }
    if (file === skillEntry) skillMd = content;
    else resources.push({ path: file.path.slice(root.prefix.length), content });
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(skillMd);
  } catch {
    return fail(SKILL_FILE, 'is not UTF-8 text');
  }
  const parsed = parseSkillMarkdown(text, root.folder);
  if (!parsed.ok) return parsed;
  resources.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ok: true, value: { ...parsed.value, files: resources } };
}

/** An entry's bytes; rejects once the skill's total would pass `budget.left`. */
async function readEntry(zip: ZipFile, entry: Entry, budget: { left: number }): Promise<Buffer> {
  const stream = await zip.openReadStreamPromise(entry);
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      budget.left -= chunk.length;
      if (budget.left < 0) throw new Error(`unpacks to more than ${SKILL_LIMITS.totalBytes} bytes`);
      chunks.push(chunk);
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks);
}

/**
 * Characters escaped when a name is shown: control characters (C0, DEL, C1), invisible and
 * direction-changing format characters, and the backslash itself, so that every shown name reads
 * back as exactly one name (a NUL before a digit read as another control character).
 */
const UNPRINTABLE =
  // eslint-disable-next-line no-control-regex
  /[\\\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;

/** Names shown up to this many characters (escapes count as their length). */
const SHOWN_NAME_LENGTH = 120;

/** A name as it can be shown in a problem: unprintable characters escaped, length bounded. */
function printableName(name: string): string {
  const pieces = Array.from(name, (char) => {
    if (!UNPRINTABLE.test(char)) return char;
    if (char === '\\') return '\\\\';
    const code = char.codePointAt(0)!;
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
  const shown = pieces.join('');
  if (shown.length <= SHOWN_NAME_LENGTH) return shown;
  // Cut between characters, never inside an escape.
  let cut = '';
  for (const piece of pieces) {
    if (cut.length + piece.length > SHOWN_NAME_LENGTH - 3) break;
    cut += piece;
  }
  return `${cut}...`;
}

function fail<T>(path: string, message: string): SkillResult<T> {
  return { ok: false, problems: [{ path, message }] };
}
