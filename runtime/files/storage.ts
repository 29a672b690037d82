/**
 * Uploaded files on disk under TILTH_DATA_DIR/files. An upload is received in two steps so that no
 * database transaction waits on the network: `receive` streams the body (decompressed when it
 * says Content-Encoding) to a temporary file while counting it against the size limit and ending
 * it when it stalls; then, in a short transaction, `place` moves it under
 * `farm/<entity>/<YYYY>-<MM>/` (renamed when the name is taken, as Drupal does; names are reserved
 * atomically, so processes sharing the folder never overwrite each other's files). Nothing of a
 * failed upload stays behind, and what a process that died mid-upload left in `tmp/` is removed
 * when the server next starts (sweepAbandonedUploads).
 *
 * A refusal is an `UploadRefused` of a kind (a name that is not one, too many bytes, a stalled
 * body, a full disk…), in the store's words and with no status: each face answers it in its own
 * (the JSON:API face's statuses: jsonapi/errors.ts `uploadApiError`); the importer reports its
 * sentence.
 *
 * Durability: the bytes are synced before the temporary file is closed, and the directory a file
 * is placed in after the rename (syncPlaced), so a file's record, committed after `place`, never
 * outlives its bytes in a power cut.
 */
import {
  closeSync,
  createWriteStream,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join, extname, basename, dirname, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { DISK_FULL_DETAIL } from '../errors.ts';

/**
 * Why the store refused a file or its name:
 * - `no-filename`: the upload names no file (no Content-Disposition, or no file name in it);
 * - `bad-filename`: a name that is not usable (nothing left once reduced, a `filename*` that is not UTF-8);
 * - `filename-too-long`: a name longer than farmOS allows;
 * - `unsupported-encoding`: a Content-Encoding the store cannot decode;
 * - `not-decompressed`: bytes that do not decompress as their Content-Encoding says;
 * - `too-large`: more bytes than the limit;
 * - `stalled`: the body sent nothing for the stall time;
 * - `interrupted`: the body ended before the whole file arrived;
 * - `disk-full`: the disk (or a quota) is full: the operator's to fix, not the sender's.
 */
export type UploadRefusalKind =
  | 'no-filename'
  | 'bad-filename'
  | 'filename-too-long'
  | 'unsupported-encoding'
  | 'not-decompressed'
  | 'too-large'
  | 'stalled'
  | 'interrupted'
  | 'disk-full';

/** A file or a file name the store refused: its kind, and a sentence saying why (the message). */
export class UploadRefused extends Error {
  constructor(
    readonly kind: UploadRefusalKind,
    detail: string,
  ) {
    super(detail);
    this.name = 'UploadRefused';
  }

  get detail(): string {
    return this.message;
  }
}

/** A full disk or quota, from the file system: the operator's to fix, not the client's. */
function diskFull(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

function diskFullRefusal(): UploadRefused {
  return new UploadRefused('disk-full', DISK_FULL_DETAIL);
}

/** Run a file-system step, a full disk reported as such (`disk-full`). */
function onDisk<T>(step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw diskFull(error) ? diskFullRefusal() : error;
  }
}

/** Extensions farmOS allows per field type (FarmFieldFactory::modifyFileField). */
export const ALLOWED_EXTENSIONS: Record<'file' | 'image', string[]> = {
  file: 'csv doc docx gz geojson gpx kml kmz logz mp3 odp ods odt ogg pdf ppt pptx tar tif tiff txt wav xls xlsx zip'.split(
    ' ',
  ),
  image: 'png gif jpg jpeg'.split(' '),
};

const MIME: Record<string, string> = {
  csv: 'text/csv',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  gz: 'application/gzip',
  geojson: 'application/geo+json',
  gpx: 'application/gpx+xml',
  kml: 'application/vnd.google-earth.kml+xml',
  kmz: 'application/vnd.google-earth.kmz',
  logz: 'application/octet-stream',
  mp3: 'audio/mpeg',
  odp: 'application/vnd.oasis.opendocument.presentation',
  ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odt: 'application/vnd.oasis.opendocument.text',
  ogg: 'audio/ogg',
  pdf: 'application/pdf',
  ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  tar: 'application/x-tar',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  txt: 'text/plain',
  wav: 'audio/wav',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  zip: 'application/zip',
  png: 'image/png',
  gif: 'image/gif',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
};

export function mimeOf(filename: string): string {
  return MIME[extname(filename).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

/** A media type as RFC 6838 writes one (`type/subtype`, with optional parameters), which may go into a Content-Type header. */
const MEDIA_TYPE =
  /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}(\s*;\s*[a-z0-9!#$&^_.+-]+=("[\x20-\x7e]*"|[a-z0-9!#$&^_.+-]+))*$/i;

/** A media type someone else gave (an imported file's `filemime`) when it is one; else the file name's. */
export function mimeTypeOr(given: unknown, filename: string): string {
  return typeof given === 'string' && given.length <= 255 && MEDIA_TYPE.test(given) ? given : mimeOf(filename);
}

/** A header value as Node gives it (each byte a Latin-1 character), read as the UTF-8 it usually is. */
function utf8(value: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}

/**
 * The file name from a Content-Disposition header (`file; filename="x"` from farmOS.js,
 * `attachment; filename="x"` from the farmOS docs, or RFC 6266's `filename*=UTF-8''…`, which wins),
 * reduced to a safe base name without control characters.
 */
export function filenameFromDisposition(header: string | undefined): string {
  if (!header)
    throw new UploadRefused(
      'no-filename',
      '"Content-Disposition" header is required. A file name in the format "filename=FILENAME" must be provided.',
    );
  let raw: string | null = null;
  const extended = /filename\*\s*=\s*([^;\s]+)/i.exec(header);
  if (extended) {
    const m = /^([\w-]+)'[^']*'(.*)$/.exec(extended[1]!);
    if (!m || !/^utf-8$/i.test(m[1]!))
      throw new UploadRefused(
        'bad-filename',
        `The "filename*" of the Content-Disposition header must be UTF-8''<percent-encoded name>.`,
      );
    try {
      raw = decodeURIComponent(m[2]!);
    } catch {
      throw new UploadRefused(
        'bad-filename',
        'The "filename*" of the Content-Disposition header is not valid percent-encoded UTF-8.',
      );
    }
  } else {
    const m = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header);
    if (m) raw = utf8((m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1'));
  }
  if (raw === null)
    throw new UploadRefused(
      'no-filename',
      'No filename found in the "Content-Disposition" header. A file name in the format "filename=FILENAME" must be provided.',
    );
  return safeFilename(raw);
}

/**
 * A file name as given by someone else (an upload's header, an imported record's `filename`),
 * reduced to a safe base name: its last path segment (`/` or `\\`), without control characters or
 * the invisible bidirectional controls that can disguise an extension ("gpj.exe"). Refused when
 * nothing usable is left, or when it is longer than farmOS allows.
 */
export function safeFilename(raw: string): string {
  const name = basename(raw.replace(/\\/g, '/'))
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '')
    .trim();
  if (!name || name === '.' || name === '..')
    throw new UploadRefused('bad-filename', `The file name "${printable(raw)}" is not usable.`);
  if ([...name].length > 240)
    throw new UploadRefused('filename-too-long', 'The file name may be at most 240 characters long.');
  return name;
}

/** A name for a message: control characters shown as `?`, cut to a readable length. */
function printable(raw: string): string {
  return raw.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').slice(0, 200);
}

/**
 * A stored path as someone else gave it (an imported file's URI), when it is one this store can
 * keep as it is: relative, `/`-separated segments of safe names (no `.` or `..`, no control
 * characters, no backslash), not under the store's own `tmp/`, at most 10 segments and 1,000
 * characters. Null otherwise.
 */
export function safeStoredPath(path: string): string | null {
  if (path.length > 1000 || /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069\\]/.test(path))
    return null;
  const segments = path.split('/');
  if (segments.length < 2 || segments.length > 10 || segments[0] === TMP_DIR) return null;
  for (const segment of segments) {
    if (!segment || segment === '.' || segment === '..' || segment !== segment.trim() || [...segment].length > 240)
      return null;
  }
  return segments.join('/');
}

/** Where received files wait to be placed (and sweepAbandonedUploads looks): no stored path may start there. */
const TMP_DIR = 'tmp';

/** A decoder for the body's Content-Encoding, or null for none. */
function decoder(encoding: string | undefined): Transform | null {
  switch ((encoding ?? 'identity').trim().toLowerCase()) {
    case 'identity':
    case '':
      return null;
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      throw new UploadRefused(
        'unsupported-encoding',
        `The Content-Encoding "${encoding}" is not supported: send the bytes as they are, or gzip, deflate or br.`,
      );
  }
}

/**
 * Remove the temporary files of uploads whose process died before placing or discarding them:
 * those in `<dataDir>/files/tmp` unchanged for `idleMs`. A file still arriving, from another
 * server sharing the directory, is written at least every TILTH_BODY_TIMEOUT, and a received one
 * is placed within a short transaction, so an idle time well beyond both means abandoned.
 * Returns how many were removed.
 */
export function sweepAbandonedUploads(dataDir: string, idleMs: number, now = Date.now()): number {
  const tmpDir = join(resolve(dataDir, 'files'), TMP_DIR);
  let removed = 0;
  let names: string[];
  try {
    names = readdirSync(tmpDir);
  } catch {
    return 0; // no upload was ever received
  }
  for (const name of names) {
    const file = join(tmpDir, name);
    try {
      const stat = statSync(file, { throwIfNoEntry: false });
      if (!stat?.isFile() || now - stat.mtimeMs < idleMs) continue;
      rmSync(file, { force: true });
      removed++;
    } catch {
      // A leftover that cannot be removed (permissions) must not stop the server from starting.
    }
  }
  return removed;
}

/** Create `path` if no file has that name (atomically, also across processes); false when one has. */
function reserve(path: string): boolean {
  try {
    closeSync(openSync(path, 'wx'));
    return true;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EEXIST') return false;
    throw error;
  }
}

/** Sync a directory, so that the entries made in it (a file renamed in, a directory made) survive a power cut. */
function syncDirectory(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface FileLimits {
  maxBytes: number;
  /** Milliseconds the body may send nothing before the upload ends (`stalled`). */
  stallMs: number;
}

/**
 * The folder of terms' files: farmOS 3.2 stores them under `farm/term/[YYYY]-[MM]`
 * (farm_entity_fields' file_directory), not under the entity type's name as it does for assets,
 * logs and organizations.
 */
const TERM_DIRECTORY = 'term';

export class FileStore {
  readonly root: string;
  /** Directories files were placed in whose parents this process has synced (syncPlaced). */
  private readonly durableDirs = new Set<string>();

  constructor(
    dataDir: string,
    private readonly limits: FileLimits,
  ) {
    this.root = resolve(dataDir, 'files');
  }

  /**
   * Stream a request body to a temporary file (no database involved). Returns it and its size.
   * `limits`: the farm's for uploads (TILTH_UPLOAD_MAX_BYTES, TILTH_BODY_TIMEOUT) unless a caller
   * that is not serving a request says its own (the importer's download of a source's file).
   */
  async receive(
    body: Readable & { headers?: Record<string, string | string[] | undefined> },
    limits: FileLimits = this.limits,
  ): Promise<{ tmp: string; size: number }> {
    const decode = decoder(body.headers?.['content-encoding'] as string | undefined);
    const tmp = this.temporaryPath();
    const { maxBytes, stallMs } = limits;
    let size = 0;
    let stalled = false;
    const abort = new AbortController();
    let timer = setTimeout(() => ((stalled = true), abort.abort()), stallMs);
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > maxBytes)
          done(
            new UploadRefused(
              'too-large',
              `The file is larger than the ${maxBytes} bytes allowed (TILTH_UPLOAD_MAX_BYTES).`,
            ),
          );
        else done(null, chunk);
      },
    });
    const onData = () => {
      clearTimeout(timer);
      timer = setTimeout(() => ((stalled = true), abort.abort()), stallMs);
    };
    body.on('data', onData);
    // flush: the bytes are synced (fsync) before the file closes, off the event loop, with no transaction open.
    const out = createWriteStream(tmp, { flags: 'wx', flush: true });
    try {
      await pipeline([body, ...(decode ? [decode] : []), counter, out], { signal: abort.signal });
    } catch (error) {
      // The file may still be opening when the pipeline fails: let it close, then remove it.
      out.destroy();
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      rmSync(tmp, { force: true });
      if (stalled)
        throw new UploadRefused(
          'stalled',
          `The upload sent nothing for ${stallMs / 1000} seconds (TILTH_BODY_TIMEOUT) and was ended; nothing was stored.`,
        );
      // A refusal of the counter's, or of a stream the caller put before it (the importer's check of a stated size).
      if (error instanceof UploadRefused) throw error;
      if (diskFull(error)) throw diskFullRefusal();
      // The disk refused to sync the bytes: the server's trouble (500), not an interrupted upload.
      if ((error as { syscall?: unknown }).syscall === 'fsync') throw error;
      if (
        decode &&
        typeof (error as { code?: string }).code === 'string' &&
        /^Z_|ERR_BROTLI|ERR__ERROR/.test((error as { code: string }).code)
      ) {
        throw new UploadRefused(
          'not-decompressed',
          `The body does not decompress as its Content-Encoding (${body.headers?.['content-encoding']}) says.`,
        );
      }
      throw new UploadRefused('interrupted', 'The upload was interrupted before the whole file arrived.');
    } finally {
      clearTimeout(timer);
      body.off('data', onData);
    }
    return { tmp, size };
  }

  /**
   * Move a received file into place under `farm/<entityType>/<YYYY>-<MM>/` (terms' under
   * `farm/term/`: TERM_DIRECTORY). Returns its stored path
   * (relative to the root). The name is reduced to a safe base name whoever gives it, and nothing is
   * ever written outside the root.
   */
  place(tmp: string, entityType: string, filename: string, now = new Date()): string {
    if (!/^[a-z][a-z0-9_]*$/.test(entityType))
      throw new Error(`Not an entity type to store files under: ${printable(entityType)}.`);
    const month = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    const folder = entityType === 'taxonomy_term' ? TERM_DIRECTORY : entityType;
    const placed = this.placeIn(tmp, ['farm', folder, month].join('/'), safeFilename(filename), { exact: false });
    return placed!;
  }

  /**
   * Move a received file to exactly this stored path (one safeStoredPath accepts), when no file has
   * it; null, with the file still waiting, when the path is taken or not one this store keeps.
   */
  placeAt(tmp: string, path: string): string | null {
    const safe = safeStoredPath(path);
    if (!safe) return null;
    const slash = safe.lastIndexOf('/');
    return this.placeIn(tmp, safe.slice(0, slash), safe.slice(slash + 1), { exact: true });
  }

  /** Move `tmp` to `<dir>/<filename>`, or to `<stem>_<n><ext>` when that is taken (unless `exact`: then null). */
  private placeIn(tmp: string, dir: string, filename: string, { exact }: { exact: boolean }): string | null {
    const folder = this.inside(dir);
    if (!folder || this.inside(`${dir}/${filename}`) === null)
      throw new Error(`Refused to place a file outside ${this.root}: ${printable(`${dir}/${filename}`)}.`);
    onDisk(() => mkdirSync(folder, { recursive: true }));
    const ext = extname(filename);
    const stem = filename.slice(0, filename.length - ext.length);
    // Reserve the name by creating it exclusively (O_EXCL), then move the upload over the
    // reservation: another process sharing the folder that wants the same name fails to create it
    // and takes the next one. Checking that a name is free and then renaming onto it let two
    // processes both find it free, and the second rename replaced the first's file.
    for (let i = -1; ; i++) {
      const candidate = i < 0 ? filename : `${stem}_${i}${ext}`;
      const target = join(folder, candidate);
      if (!onDisk(() => reserve(target))) {
        if (exact) return null;
        continue;
      }
      try {
        onDisk(() => renameSync(tmp, target));
        this.syncPlaced(dir);
      } catch (error) {
        rmSync(target, { force: true });
        throw error;
      }
      return `${dir}/${candidate}`;
    }
  }

  /** A new file name in the waiting room (tmp/, swept of what a dead process left), for bytes on their way in. */
  temporaryPath(): string {
    const tmpDir = join(this.root, TMP_DIR);
    onDisk(() => mkdirSync(tmpDir, { recursive: true }));
    return join(tmpDir, randomBytes(12).toString('hex'));
  }

  /**
   * Sync the directory a file was just renamed into; and, the first time this process places a
   * file there, those above it up to the data directory: `place` may have made any of them, and a
   * directory's entry lives in its parent. (Another process that made one synced it the same way.)
   */
  private syncPlaced(dir: string): void {
    const full = join(this.root, dir);
    onDisk(() => syncDirectory(full));
    if (this.durableDirs.has(full)) return;
    const stop = dirname(this.root);
    for (let at = full; at !== stop && dirname(at) !== at;) {
      at = dirname(at);
      onDisk(() => syncDirectory(at));
    }
    this.durableDirs.add(full);
  }

  /** Forget a received file that was not placed (a no-op once placed). */
  discard(tmp: string): void {
    rmSync(tmp, { force: true });
  }

  /** The absolute path of a stored file, refusing anything outside the root (and the waiting room, tmp/). */
  absolute(path: string): string | null {
    const full = this.inside(path);
    return full && !full.startsWith(join(this.root, TMP_DIR) + sep) ? full : null;
  }

  /** A path under the root as an absolute one, or null when it resolves outside the root (`..`, an absolute path). */
  private inside(path: string): string | null {
    const full = resolve(this.root, path);
    return full.startsWith(this.root + sep) ? full : null;
  }

  remove(path: string): void {
    const full = this.absolute(path);
    if (full) rmSync(full, { force: true });
  }
}
