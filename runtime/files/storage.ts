/**
 * Uploaded files on disk under TILTH_DATA_DIR/files. Bytes are streamed to a temporary file while
 * they are counted (never held in memory), then moved under `farm/<entity>/<YYYY>-<MM>/`, renamed
 * when the name is taken, as Drupal does.
 */
import { createWriteStream, mkdirSync, renameSync, rmSync, existsSync } from 'node:fs';
import { join, extname, basename, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream/promises';
import { Transform, type Readable } from 'node:stream';
import { ApiError } from '../errors.ts';

/** Extensions farmOS allows per field type (FarmFieldFactory::modifyFileField). */
export const ALLOWED_EXTENSIONS: Record<'file' | 'image', string[]> = {
  file: 'csv doc docx gz geojson gpx kml kmz logz mp3 odp ods odt ogg pdf ppt pptx tar tif tiff txt wav xls xlsx zip'.split(' '),
  image: 'png gif jpg jpeg'.split(' '),
};

const MIME: Record<string, string> = {
  csv: 'text/csv', doc: 'application/msword', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', gz: 'application/gzip',
  geojson: 'application/geo+json', gpx: 'application/gpx+xml', kml: 'application/vnd.google-earth.kml+xml', kmz: 'application/vnd.google-earth.kmz',
  logz: 'application/octet-stream', mp3: 'audio/mpeg', odp: 'application/vnd.oasis.opendocument.presentation', ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odt: 'application/vnd.oasis.opendocument.text', ogg: 'audio/ogg', pdf: 'application/pdf', ppt: 'application/vnd.ms-powerpoint',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation', tar: 'application/x-tar', tif: 'image/tiff', tiff: 'image/tiff',
  txt: 'text/plain', wav: 'audio/wav', xls: 'application/vnd.ms-excel', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  zip: 'application/zip', png: 'image/png', gif: 'image/gif', jpg: 'image/jpeg', jpeg: 'image/jpeg',
};

export function mimeOf(filename: string): string {
  return MIME[extname(filename).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

/** The largest upload accepted, in bytes. */
export const MAX_UPLOAD_BYTES = 64 * 1024 * 1024;

/**
 * The file name from a Content-Disposition header (`file; filename="x"` from farmOS.js,
 * `attachment; filename="x"` from the farmOS docs), reduced to a safe base name.
 */
export function filenameFromDisposition(header: string | undefined): string {
  if (!header) throw new ApiError(400, '"Content-Disposition" header is required. A file name in the format "filename=FILENAME" must be provided.');
  if (/filename\*\s*=/i.test(header)) throw new ApiError(400, 'The extended "filename*" format is currently not supported in the "Content-Disposition" header; send filename="…".');
  const m = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header);
  if (!m) throw new ApiError(400, 'No filename found in the "Content-Disposition" header. A file name in the format "filename=FILENAME" must be provided.');
  const raw = (m[1] ?? m[2] ?? '').replace(/\\(.)/g, '$1');
  const name = basename(raw.replace(/\\/g, '/'))
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .trim();
  if (!name || name === '.' || name === '..') throw new ApiError(400, `The file name "${raw}" is not usable.`);
  if ([...name].length > 240) throw new ApiError(422, 'The file name may be at most 240 characters long.');
  return name;
}

export class FileStore {
  readonly root: string;

  constructor(dataDir: string) {
    this.root = resolve(dataDir, 'files');
  }

  /** Stream a request body to disk. Returns the stored path (relative to the root) and the size. */
  async save(body: Readable, entityType: string, filename: string, now = new Date()): Promise<{ path: string; size: number }> {
    const tmpDir = join(this.root, 'tmp');
    mkdirSync(tmpDir, { recursive: true });
    const tmp = join(tmpDir, randomBytes(12).toString('hex'));
    let size = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > MAX_UPLOAD_BYTES) done(new ApiError(413, `The file is larger than the ${MAX_UPLOAD_BYTES / 1024 / 1024} MiB allowed.`));
        else done(null, chunk);
      },
    });
    try {
      await pipeline(body, counter, createWriteStream(tmp, { flags: 'wx' }));
    } catch (error) {
      rmSync(tmp, { force: true });
      throw error instanceof ApiError ? error : new ApiError(400, 'The upload was interrupted before the whole file arrived.');
    }
    const month = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
    const dir = ['farm', entityType, month].join('/');
    mkdirSync(join(this.root, dir), { recursive: true });
    const ext = extname(filename);
    const stem = filename.slice(0, filename.length - ext.length);
    let candidate = filename;
    for (let i = 0; existsSync(join(this.root, dir, candidate)); i++) candidate = `${stem}_${i}${ext}`;
    renameSync(tmp, join(this.root, dir, candidate));
    return { path: `${dir}/${candidate}`, size };
  }

  /** The absolute path of a stored file, refusing anything outside the root. */
  absolute(path: string): string | null {
    const full = resolve(this.root, path);
    return full.startsWith(this.root + sep) ? full : null;
  }

  remove(path: string): void {
    const full = this.absolute(path);
    if (full) rmSync(full, { force: true });
  }
}
