/**
 * The files of `tilth import farmos`: a source file's bytes downloaded and checked against its
 * stated size, placed at its `private://` path (or under `farm/file/`), what a killed run left
 * swept, and the SHA-256 of a stored file (verify.ts compares it with the source's).
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, type Dirent } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { chunks, type EntityRecord } from '../storage/records.ts';
import { safeStoredPath, UploadRefused, type FileLimits, type FileStore } from '../files/storage.ts';
import { SourceError, type SourceResource } from './source.ts';
import type { ImportRun } from './run-state.ts';

/** A source's file is copied whatever its size (the farm's upload limit is for requests), and may stall two minutes. */
const SOURCE_FILE_LIMITS: FileLimits = { maxBytes: Number.MAX_SAFE_INTEGER, stallMs: 120_000 };

/** Imported bytes go under `farm/file/…` of the file store: no upload goes there (uploads go under their record's entity type). */
const IMPORTED_FILES_ENTITY = 'file';
const IMPORTED_FILES_DIR = join('farm', IMPORTED_FILES_ENTITY);
/** The scheme of the URIs of stored files (`private://<path>`), the one farmOS keeps farm files under. */
const PRIVATE_SCHEME = 'private://';

/**
 * Where an imported file's bytes go: the path of the source's `private://` URI, as farmOS's own
 * migration keeps it, so that links to the file (in notes, bookmarks, other systems) still work
 * with this farm's address. When that path is taken here (or is not one the file store keeps, or
 * the source's URI is not private), under `farm/file/<month>/` instead, and the record is named
 * in the progress notes. Bytes a killed run left at the path without its record (no record has
 * the path, and they are these very bytes) are taken as this record's.
 */
export async function placeImported(
  run: ImportRun,
  bytes: { tmp: string; sha256: string },
  resource: SourceResource,
  current: EntityRecord | null,
  filename: string,
): Promise<string> {
  const uri = (resource.attributes?.uri as { value?: unknown } | undefined)?.value;
  const wanted = typeof uri === 'string' && uri.startsWith(PRIVATE_SCHEME) ? uri.slice(PRIVATE_SCHEME.length) : null;
  if (wanted !== null) {
    const kept = run.files.placeAt(bytes.tmp, wanted);
    if (kept) return kept;
    if (
      safeStoredPath(wanted) &&
      current?.values.get('path') !== wanted &&
      (await leftByKilledRun(run, wanted, bytes.sha256))
    ) {
      run.files.remove(wanted);
      const again = run.files.placeAt(bytes.tmp, wanted);
      if (again) return again;
    }
  }
  const path = run.files.place(bytes.tmp, IMPORTED_FILES_ENTITY, filename);
  const why =
    wanted === null
      ? `its URI (${typeof uri === 'string' ? uri : 'none'}) is not a private:// one`
      : safeStoredPath(wanted)
        ? `${PRIVATE_SCHEME}${wanted} is taken here`
        : `${PRIVATE_SCHEME}${wanted} is not a path this farm keeps files at`;
  run.progress.note(`Stored file--file ${resource.id} at ${PRIVATE_SCHEME}${path}: ${why}.`, {
    moved: resource.id,
    uri: `${PRIVATE_SCHEME}${path}`,
  });
  return path;
}

/** Bytes at a stored path that no file record has, equal to these: what a killed run of this import placed. */
async function leftByKilledRun(run: ImportRun, path: string, sha256: string): Promise<boolean> {
  const table = run.services.store.entityType('file').table;
  if (await run.ctx.db.knex(table).where('path', path).first('id')) return false;
  return (await storedSha256(run.files, path)) === sha256;
}

/**
 * Bytes a killed run placed under `farm/file/` (where only this command puts files) whose
 * record's transaction never committed: removed, or they would stay there unreferenced.
 */
export async function sweepUnrecordedBytes(run: ImportRun): Promise<void> {
  const dir = join(run.files.root, IMPORTED_FILES_DIR);
  if (!existsSync(dir)) return;
  const onDisk = (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((d) => d.isFile())
    .map((d) =>
      relative(run.files.root, join(d.parentPath ?? d.path, d.name))
        .split(sep)
        .join('/'),
    );
  if (!onDisk.length) return;
  const table = run.services.store.entityType('file').table;
  const recorded = new Set<string>();
  for (const part of chunks(onDisk, 500))
    for (const r of (await run.ctx.db.knex(table).whereIn('path', part).select('path')) as Array<{ path: string }>)
      recorded.add(r.path);
  for (const path of onDisk) if (!recorded.has(path)) run.files.remove(path);
}

/**
 * A file's bytes, downloaded to a temporary file with their size and SHA-256; refused when the
 * source does not state its size (any answer, an endless one or another server's, would be
 * stored as the file), and when the bytes are not that size (read no further than it).
 */
export async function download(
  run: ImportRun,
  resource: SourceResource,
): Promise<{ tmp: string; size: number; sha256: string }> {
  const uri = resource.attributes?.uri as { url?: string; value?: string } | undefined;
  if (!uri?.url) throw new SourceError('the source gives no uri.url to download it from.');
  const filesize = resource.attributes?.filesize;
  const stated =
    typeof filesize === 'number' || (typeof filesize === 'string' && /^\d+$/.test(filesize)) ? Number(filesize) : NaN;
  if (!Number.isSafeInteger(stated) || stated < 0)
    throw new SourceError('the source does not state its filesize, so its bytes cannot be checked; not downloaded.');
  const body = await run.source.download(uri.url);
  const hash = createHash('sha256');
  let read = 0;
  const hashing = new Transform({
    transform(chunk: Buffer, _enc, done) {
      read += chunk.length;
      if (read > stated) {
        body.destroy(); // the source may send for ever: its connection goes
        return done(
          new UploadRefused(
            'too-large',
            `its bytes are longer than the filesize ${stated} the source states; not read further.`,
          ),
        );
      }
      hash.update(chunk);
      done(null, chunk);
    },
  });
  const received = await run.files.receive(Object.assign(body.pipe(hashing), { headers: {} }), SOURCE_FILE_LIMITS);
  run.progress.advance(0, received.size);
  if (stated !== received.size) {
    run.files.discard(received.tmp);
    throw new SourceError(`its bytes are ${received.size} long, but the source says filesize ${stated}.`);
  }
  return { ...received, sha256: hash.digest('hex') };
}

/** The SHA-256 of a stored file (verify.ts compares it with the source's bytes). */
export async function storedSha256(files: FileStore, path: string): Promise<string | null> {
  const full = files.absolute(path);
  if (!full) return null;
  const hash = createHash('sha256');
  try {
    await pipeline(createReadStream(full), hash);
  } catch {
    return null;
  }
  return hash.digest('hex');
}
