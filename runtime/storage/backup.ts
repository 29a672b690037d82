/**
 * Backups of a whole farm, taken while the server runs and writes, and their restore.
 *
 * A backup is one `.tar.gz` file holding `manifest.json`, the database and the uploaded files:
 * - SQLite: a copy made with SQLite's online backup API from its own read connection, so the
 *   server goes on writing meanwhile. It copies in steps (for the progress bar); should the
 *   server write during it, SQLite starts over, and the rest is then copied in one step, which is
 *   consistent by itself.
 * - PostgreSQL: `pg_dump --format=custom`, which reads one consistent snapshot.
 * The database (with the keys it holds) is copied first and the files after it: every file a
 * copied record names was written before that record was committed, so it is in the backup too.
 *
 * A restore goes only into an empty data directory or an empty database; it never overwrites a
 * live farm. One that fails part way leaves the target as empty as it found it, so it can be run
 * again: files and the SQLite file are copied under temporary names and renamed into place when
 * whole, and pg_restore runs in one transaction.
 *
 * Both are on disk before they report success (a backup is often taken to a disk that is then
 * unplugged): the backup is written beside its name, synced, then renamed into place and its
 * directory synced, so the name holds a whole backup or nothing; a restore syncs what it wrote.
 */
import { spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  cpSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import * as tar from 'tar';
import type { Config } from '../config.ts';
import { describeDatabase } from '../config.ts';
import { openDatabase } from './database.ts';
import { TILTH_VERSION } from '../version.ts';

export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

interface Manifest {
  format: 1;
  tilth: string;
  dialect: 'sqlite' | 'postgres';
  created: string;
}

export interface BackupReport {
  file: string;
  bytes: number;
  files: number;
}

/** Reports progress from 0 to 1 (for a progress bar); `stage` names what is being copied. */
export type Progress = (stage: string, fraction: number) => void;

const SQLITE_FILE = 'tilth.sqlite';
const PG_DUMP = 'tilth.pgdump';
/** The suffix of what a restore copies into the data directory until it is whole. */
const RESTORING = '.restoring';

/** Run a PostgreSQL client program; a missing program is explained, not a stack trace. */
function run(program: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(
        new BackupError(
          error.code === 'ENOENT'
            ? `${program} is not installed. Install PostgreSQL's client programs (Debian: apt-get install postgresql-client) and try again, or back up with: ${program} ${args.map((a) => (a.includes('://') ? 'DATABASE_URL' : a)).join(' ')}`
            : `${program} failed: ${error.message}`,
        ),
      ),
    );
    child.on('exit', (code) =>
      code === 0
        ? resolve()
        : reject(new BackupError(`${program} failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' ')}`)),
    );
  });
}

async function snapshotSqlite(config: Config, target: string, progress: Progress): Promise<void> {
  const source = join(config.dataDir, SQLITE_FILE);
  if (!existsSync(source))
    throw new BackupError(`There is no Tilth database at ${source} (TILTH_DATA_DIR=${config.dataDir}).`);
  const db = new Database(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    let lowest = Infinity;
    await db.backup(target, {
      progress({ totalPages, remainingPages }) {
        progress('database', totalPages ? 1 - remainingPages / totalPages : 1);
        // Started over because the server wrote: copy the rest in one step, which cannot be interrupted.
        if (remainingPages > lowest) return totalPages;
        lowest = remainingPages;
        return 256;
      },
    });
    progress('database', 1);
  } finally {
    db.close();
  }
}

/** Write a backup of the configured farm to `file` (a .tar.gz). */
export async function backup(config: Config, file: string, progress: Progress = () => {}): Promise<BackupReport> {
  const staging = mkdtempSync(join(tmpdir(), 'tilth-backup-'));
  try {
    const manifest: Manifest = {
      format: 1,
      tilth: TILTH_VERSION,
      dialect: config.databaseUrl ? 'postgres' : 'sqlite',
      created: new Date().toISOString(),
    };
    if (config.databaseUrl) {
      progress('database', 0);
      await run('pg_dump', [
        '--format=custom',
        '--no-owner',
        '--no-privileges',
        `--file=${join(staging, PG_DUMP)}`,
        config.databaseUrl,
      ]);
      progress('database', 1);
    } else {
      await snapshotSqlite(config, join(staging, SQLITE_FILE), progress);
    }
    const files = join(config.dataDir, 'files');
    const unfinished = join(files, 'tmp');
    // Unfinished uploads (files/tmp) are not records' files.
    if (existsSync(files))
      cpSync(files, join(staging, 'files'), {
        recursive: true,
        filter: (src) => src !== unfinished && !src.startsWith(`${unfinished}/`),
      });
    const count = existsSync(join(staging, 'files'))
      ? readdirSync(join(staging, 'files'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length
      : 0;
    progress('files', 1);
    writeFileSync(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    const entries = [
      'manifest.json',
      config.databaseUrl ? PG_DUMP : SQLITE_FILE,
      ...(existsSync(join(staging, 'files')) ? ['files'] : []),
    ];
    await writeArchive(file, (target) =>
      tar.create({ gzip: true, file: target, cwd: staging, portable: true }, entries),
    );
    return { file, bytes: statSync(file).size, files: count };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Write the backup to `file` so that it is on disk when this resolves. A regular file (or none
 * yet) is written beside its real path (a symlink is followed, to the disk it points at), synced,
 * given the mode of the file it replaces (0600 for a new one: a backup holds the farm's password
 * hashes and keys), renamed into place, and its directory synced: the name never holds half a
 * backup. Anything else (a pipe, /dev/stdout) is written to as it is, as a stream.
 */
async function writeArchive(file: string, write: (target: string) => Promise<void>): Promise<void> {
  let real: string;
  try {
    real = realpathSync(file);
  } catch {
    real = join(realpathSync(dirname(file)), basename(file));
  }
  const existing = existsSync(real) ? statSync(real) : null;
  if (existing && !existing.isFile()) {
    await write(real);
    return;
  }
  const partial = join(dirname(real), `.${basename(real)}.partial-${process.pid}`);
  try {
    // Made 0600 before a byte is written: another local user could otherwise open the archive
    // (password hashes, the cookie key) while it is written, and keep reading it after the chmod.
    rmSync(partial, { force: true });
    closeSync(openSync(partial, 'wx', 0o600));
    await write(partial);
    chmodSync(partial, existing ? existing.mode & 0o7777 : 0o600);
    syncToDisk(partial);
    renameSync(partial, real);
  } finally {
    rmSync(partial, { force: true });
  }
  syncToDisk(dirname(real));
}

/** fsync a file or a directory (a directory: the names in it, such as a file just renamed into it). */
function syncToDisk(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** fsync a tree that was just written: every file, then every directory (their entries). */
function syncTree(path: string): void {
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) syncTree(join(path, name));
  syncToDisk(path);
}

/** Bring a backup back into the configured data directory or database, which must be empty. */
export async function restore(config: Config, file: string, progress: Progress = () => {}): Promise<Manifest> {
  if (!existsSync(file)) throw new BackupError(`There is no backup file at ${file}.`);
  const staging = mkdtempSync(join(tmpdir(), 'tilth-restore-'));
  try {
    try {
      await tar.extract({ file, cwd: staging, strict: true });
    } catch (error) {
      throw new BackupError(
        `${file} is not a Tilth backup (a .tar.gz made by tilth backup): ${(error as Error).message}`,
      );
    }
    if (!existsSync(join(staging, 'manifest.json')))
      throw new BackupError(`${file} is not a Tilth backup: it has no manifest.json.`);
    const manifest = JSON.parse(readFileSync(join(staging, 'manifest.json'), 'utf8')) as Manifest;
    const target = config.databaseUrl ? 'postgres' : 'sqlite';
    if (manifest.dialect !== target) {
      throw new BackupError(
        `${file} is a backup of a ${manifest.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} farm; the settings point at the ${describeDatabase(config)}. Restore it with the same kind of database.`,
      );
    }
    await assertEmpty(config);
    // Everything is copied under a temporary name and renamed into place once whole and synced,
    // the database file last: a restore that fails part way (a full disk) leaves no farm that a
    // server would open, and nothing that a second restore would refuse as one.
    const restoring = (name: string) => join(config.dataDir, `${name}${RESTORING}`);
    const removeRestoring = () => {
      for (const name of [SQLITE_FILE, 'files']) rmSync(restoring(name), { recursive: true, force: true });
    };
    mkdirSync(config.dataDir, { recursive: true });
    removeRestoring();
    const hasFiles = existsSync(join(staging, 'files'));
    try {
      if (hasFiles) {
        cpSync(join(staging, 'files'), restoring('files'), { recursive: true });
        syncTree(restoring('files'));
      }
      progress('database', 0);
      if (config.databaseUrl) {
        // In one transaction: a dump that fails part way (cut short, damaged) leaves the database
        // as empty as it was, so the restore can be run again; without it the tables made before
        // the failure stay, and a second restore is refused as overwriting a farm.
        await run('pg_restore', [
          '--no-owner',
          '--no-privileges',
          '--single-transaction',
          `--dbname=${config.databaseUrl}`,
          join(staging, PG_DUMP),
        ]);
      } else {
        cpSync(join(staging, SQLITE_FILE), restoring(SQLITE_FILE));
        syncToDisk(restoring(SQLITE_FILE));
      }
    } catch (error) {
      removeRestoring();
      throw error;
    }
    progress('database', 1);
    // (An empty files directory, which assertEmpty lets through, is replaced by the rename.)
    if (hasFiles) renameSync(restoring('files'), join(config.dataDir, 'files'));
    if (!config.databaseUrl) renameSync(restoring(SQLITE_FILE), join(config.dataDir, SQLITE_FILE));
    // The data directory's entries, and its own entry in its parent (restore may have made it).
    for (const dir of [config.dataDir, dirname(config.dataDir)]) syncToDisk(dir);
    progress('files', 1);
    // pg_restore leaves the tables without planner statistics: until autovacuum gets to them
    // (never, where it is off) every statement is planned on default guesses of each table's
    // rows and values, which can choose sequential scans and hash joins over whole tables.
    // Last, when the farm is whole: if this fails, only the statistics are missing.
    if (config.databaseUrl) {
      await analyze(config).catch((error: Error) => {
        throw new BackupError(
          `The farm is restored, but PostgreSQL's planner statistics could not be gathered (${error.message}). Run ANALYZE on the database before serving it.`,
        );
      });
    }
    return manifest;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Gather PostgreSQL's planner statistics for every table of the farm. */
async function analyze(config: Config): Promise<void> {
  const db = openDatabase(config);
  try {
    await db.knex.raw('ANALYZE');
  } finally {
    await db.close();
  }
}

/** Refuse to restore over a farm: the target must hold no Tilth data. */
async function assertEmpty(config: Config): Promise<void> {
  const refuse = () =>
    new BackupError(
      `The ${describeDatabase(config)} already holds a farm; tilth restore never overwrites one. Point ${config.databaseUrl ? 'DATABASE_URL at a new, empty database' : 'TILTH_DATA_DIR at a new, empty directory'}.`,
    );
  if (!config.databaseUrl) {
    const file = join(config.dataDir, SQLITE_FILE);
    if (existsSync(file) && statSync(file).size > 0) throw refuse();
    if (existsSync(join(config.dataDir, 'files'))) throw refuse();
    return;
  }
  // A farm's uploads are part of it, on PostgreSQL too.
  const files = join(config.dataDir, 'files');
  if (existsSync(files) && readdirSync(files).length > 0) throw refuse();
  const db = openDatabase(config);
  try {
    const tables = await db.knex.raw(
      "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'",
    );
    if (Number(tables.rows[0].n) > 0) throw refuse();
  } finally {
    await db.close();
  }
}
