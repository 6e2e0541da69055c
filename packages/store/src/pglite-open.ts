import {
  type Dirent,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Extensions, PGlite } from '@electric-sql/pglite';
import { LOCK_FILE } from './dir-lock.js';
import { compiledPgliteWasm } from './pglite-wasm.js';
import { tarWithout } from './tar-filter.js';

/**
 * How an embedded database came to be: files already there, a copy of the cached template, or
 * a new cluster made by initdb (the slow path: seconds of PostgreSQL bootstrap in WebAssembly).
 */
export type PgliteOrigin = 'existing' | 'template' | 'initdb';

export interface OpenPgliteOptions {
  /** Directory of the database files; omitted means in memory. */
  readonly dataDir?: string | undefined;
  readonly vector: boolean;
  /** Where the initdb template is cached; `false` never reads nor writes one. */
  readonly templateDir: string | false;
  /**
   * PostgreSQL's `shared_buffers`, in MB. @default sized by the data already there
   * ({@link sharedBuffersForData})
   */
  readonly sharedBuffersMb?: number | undefined;
}

/**
 * The user's cache folder for the template (`$XDG_CACHE_HOME/agent-backend`, else
 * `~/.cache/agent-backend`): shared by every clone and data directory of this user. `false`
 * when this user has no home folder (a container's arbitrary uid): no template then.
 */
export function defaultTemplateDir(): string | false {
  try {
    const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
    return join(base, 'agent-backend');
  } catch {
    return false;
  }
}

/** Whether `dataDir` already holds a database cluster (initdb writes PG_VERSION first). */
export function pgliteDataDirExists(dataDir: string): boolean {
  return existsSync(join(dataDir, 'PG_VERSION'));
}

function pgliteVersion(): string {
  // The package's exports do not include its package.json: walk up from its entry.
  let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string })
    .version;
}

/** One template per PGlite version: a new version may bring a new PostgreSQL or catalog. */
export function templateFile(templateDir: string): string {
  return join(templateDir, `pglite-${pgliteVersion()}-initdb.tar`);
}

/**
 * Saves a just-initialized cluster as the template. Written to a temporary name and renamed,
 * so a reader never sees half a file and concurrent writers each leave a whole one. A cache:
 * failing to write it (read-only home, full disk) changes nothing but the next start's time.
 */
async function saveTemplate(db: PGlite, file: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  try {
    const dump = await db.dumpDataDir('none');
    // Without our lock file: a copy holding the creator's pid would take the place of the lock
    // of every directory made from it.
    const tar = tarWithout(new Uint8Array(await dump.arrayBuffer()), new Set([LOCK_FILE]));
    mkdirSync(dirname(file), { recursive: true });
    await writeFile(temporary, tar);
    renameSync(temporary, file);
  } catch {
    rmSync(temporary, { force: true });
  }
}

/** Empties a data directory that a failed load left half-written, keeping our lock file. */
function clearDataDir(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (name !== LOCK_FILE) rmSync(join(dataDir, name), { recursive: true, force: true });
  }
}

/**
 * PostgreSQL's `shared_buffers` for an embedded, single-user database with little data (a new
 * one, or one in memory). PGlite's cluster is made by initdb with `shared_buffers = 128MB`, and
 * its WebAssembly build zero-fills shared memory when it allocates it, so all of it is resident
 * from the start, used or not. 16 MB (2,048 pages; `wal_buffers` follows at 512 kB) hold the
 * working set of one user's conversations; a page read past it comes from the OS page cache
 * through the file system, which slows searches over larger sets (figures in
 * docs/BENCHMARKS.md, "Footprint").
 */
export const DEFAULT_SHARED_BUFFERS_MB = 16;

/**
 * How much more than the open cache {@link sharedBuffersForData} must give before the database
 * thread reopens PGlite with it (each reopen holds statements back for well under a second).
 */
export const CACHE_GROW_STEP_MB = 16;

/** The most {@link sharedBuffersForData} gives: what PGlite's initdb sets. */
export const MAX_SIZED_SHARED_BUFFERS_MB = 128;

/**
 * `shared_buffers` for the database already in `dataDir`, when the operator set none: the size
 * of its largest database (the one the service writes; a new cluster's template databases are
 * ~8 MB each), rounded up to 8 MB, at least {@link DEFAULT_SHARED_BUFFERS_MB} and at most
 * {@link MAX_SIZED_SHARED_BUFFERS_MB}, PostgreSQL's own default. The buffers are resident from
 * the start (see {@link DEFAULT_SHARED_BUFFERS_MB}), so a database with little data pays for
 * little, and one that grew to thousands of memories and chunks gets more of its indexes and
 * tables cached (at 10,000 memories per user, 16 MB made memory search 1.2-1.3x slower;
 * docs/BENCHMARKS.md, "Footprint"). A table scanned whole that is larger than a quarter of the
 * cache still goes through PostgreSQL's small ring of buffers (its rule for large sequential
 * scans) and is read from the OS page cache, which costs PGlite little (measured there too).
 * Sized when the database opens; the database thread grows it as the data grows (see
 * `pglite-worker.ts`, {@link CACHE_GROW_STEP_MB}).
 */
export function sharedBuffersForData(dataDir: string | undefined): number {
  let largest = 0;
  if (dataDir) {
    const base = join(dataDir, 'base');
    for (const entry of entriesOf(base))
      if (entry.isDirectory()) largest = Math.max(largest, filesSize(join(base, entry.name)));
  }
  const mb = Math.ceil(largest / 2 ** 20 / 8) * 8;
  return Math.min(MAX_SIZED_SHARED_BUFFERS_MB, Math.max(DEFAULT_SHARED_BUFFERS_MB, mb));
}

function entriesOf(dir: string): Dirent[] {
  try {
    return readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/** The total size of the files under `dir` (0 when it is missing or unreadable). */
function filesSize(dir: string): number {
  let total = 0;
  for (const entry of entriesOf(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += filesSize(path);
    else if (entry.isFile()) total += statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  }
  return total;
}

/**
 * Opens PGlite. A new database (a new data directory, or in memory) starts from the cached
 * initdb template when there is one: unpacking it takes well under a second where initdb takes
 * 4-15 s on a 2-core machine (docs/BENCHMARKS.md, "First start"). The first initdb of a PGlite
 * version writes the template for every later one. A template that fails to load is deleted and
 * initdb runs instead.
 */
export async function openPglite(
  options: OpenPgliteOptions,
): Promise<{ db: PGlite; origin: PgliteOrigin; sharedBuffersMb: number }> {
  // Loaded here, not at import: a role on PostgreSQL never loads PGlite (docs/BENCHMARKS.md).
  const { PGlite } = await import('@electric-sql/pglite');
  const extensions: Extensions = options.vector
    ? { vector: (await import('@electric-sql/pglite-pgvector')).vector }
    : {};
  const sharedBuffers = options.sharedBuffersMb ?? sharedBuffersForData(options.dataDir);
  const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffers}MB`];
  const pgliteWasmModule = await compiledPgliteWasm();
  const { dataDir } = options;
  if (dataDir && pgliteDataDirExists(dataDir)) {
    const db = new PGlite({ dataDir, extensions, startParams, pgliteWasmModule });
    await db.waitReady;
    return { db, origin: 'existing', sharedBuffersMb: sharedBuffers };
  }
  let file: string | undefined;
  try {
    file = options.templateDir ? templateFile(options.templateDir) : undefined;
  } catch {
    // PGlite's version unreadable (an unusual install layout): start without a template.
  }
  if (file && existsSync(file)) {
    let db: PGlite | undefined;
    try {
      db = new PGlite({
        dataDir,
        extensions,
        startParams,
        pgliteWasmModule,
        loadDataDir: new Blob([readFileSync(file)]),
      });
      await db.waitReady;
      // The caller holds the directory's lock: a template that carried a lock file of its own
      // (written by another tool) must not leave another pid in it.
      if (dataDir) writeFileSync(join(dataDir, LOCK_FILE), String(process.pid), { mode: 0o600 });
      return { db, origin: 'template', sharedBuffersMb: sharedBuffers };
    } catch {
      await db?.close().catch(() => {});
      rmSync(file, { force: true });
      if (dataDir) clearDataDir(dataDir);
    }
  }
  const db = new PGlite({ dataDir, extensions, startParams, pgliteWasmModule });
  await db.waitReady;
  if (file) await saveTemplate(db, file);
  return { db, origin: 'initdb', sharedBuffersMb: sharedBuffers };
}
