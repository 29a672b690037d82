/**
 * `tilth import farmos`: copy a farm from a farmOS (or Tilth) server into this database, in
 * dependency order (users, taxonomy terms, files, data streams, assets, quantities, logs, then the
 * readings of data streams), a page per transaction. Each record is stored as it was (records.ts)
 * and noted in the import map (mapping.ts) in the same transaction; a record the map already holds
 * with the same digest is not written again, so a run that was killed resumes, and a second run of
 * an unchanged farm writes nothing. A record type read to its end with nothing failed leaves a
 * mark: the next run asks the source only for its records changed since (at or after). A record
 * that cannot be stored is reported by UUID with the reason and the rest goes on; one whose
 * relationship names a record of its own entity type not here yet (a parent on a later page) waits
 * until the end of its phase. The farm's computed
 * locations and groups are rebuilt once, at the end, for every asset: each page that writes
 * leaves the request for it in its transaction, so a run killed before the end leaves it too.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, type Dirent } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import { chunks, lockRows, type Db, type EntityRecord, type ItemValue } from '../storage/records.ts';
import { lockForDeletion } from '../entities/deletion-locks.ts';
import { describeReferrers, recordName, splitReferenced } from '../entities/reference-integrity.ts';
import { ApiError, MissingReferenceError, ValidationError } from '../errors.ts';
import { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { effectivePermissions, USER_ACCESS_SCOPE } from '../access/roles.ts';
import type { Principal } from '../access/principal.ts';
import { mimeTypeOr, safeFilename, safeStoredPath, type FileLimits, type FileStore } from '../files/storage.ts';
import type { Placements } from '../farm/placements.ts';
import { insertReadings, READINGS_TABLE } from '../farm/data-streams.ts';
import { savesNewRevision } from '../storage/revisions.ts';
import { parseTimestamp } from '../values/timestamps.ts';
import { FarmSource, SourceError, type SourceResource } from './source.ts';
import { sourceDigest, spooledReadings, spoolSourceReadings } from './readings.ts';
import { digestOf, ImportMap, type MapEntry, type MapRow } from './mapping.ts';
import { writeNewRecords, writeRecord, type WriteContext } from './records.ts';
import { READINGS_BY_STREAM, READINGS_COUNTS, type BundleCounts, type Progress } from './progress.ts';

/** Members every Drupal entity serves that are bookkeeping, not data to carry. */
const OWN_MEMBERS = new Set(['langcode', 'default_langcode', 'revision_default', 'revision_translation_affected', 'revision_created', 'revision_log_message', 'revision_user', 'content_translation_source', 'content_translation_outdated', 'metatag', 'path']);

/**
 * Seconds before the source's time when a bundle's reading began that the next run reads from: a
 * write at the source that began before (its `changed` is its start) and committed while this run
 * read is not missed.
 */
const MARK_MARGIN_SECONDS = 60;

/**
 * Read whole on every run: users (few; each run matches them by name), data streams (few; their
 * readings change without their `changed`, and each run compares them) and files: a file uploaded
 * at the source is kept (its `status` turns true) when a record first refers to it, and its
 * `changed` does not move. File records are few beside logs, and one whose digest is unchanged
 * costs its share of a page read, nothing more (its bytes are downloaded only when it changed).
 * Reading back what verification found different would cost a second pass and still leave a run
 * with --no-verify behind.
 */
const READ_WHOLE = new Set(['user', 'file', 'data_stream']);

/** A source's file is copied whatever its size (the farm's upload limit is for requests), and may stall two minutes. */
const SOURCE_FILE_LIMITS: FileLimits = { maxBytes: Number.MAX_SAFE_INTEGER, stallMs: 120_000 };

/** Entity types in the order their records can be stored: each refers only to those before it (and to itself: parents). */
export const IMPORT_ORDER = ['user', 'taxonomy_term', 'file', 'data_stream', 'asset', 'quantity', 'log'] as const;

/** Imported bytes go under `farm/file/…` of the file store: no upload goes there (uploads go under their record's entity type). */
const IMPORTED_FILES_ENTITY = 'file';
const IMPORTED_FILES_DIR = join('farm', IMPORTED_FILES_ENTITY);
/** The scheme of the URIs of stored files (`private://<path>`), the one farmOS keeps farm files under. */
const PRIVATE_SCHEME = 'private://';

/** Resource types of /api that are configuration (bundles, roles, flags…), not records to copy. */
function isConfigType(type: string): boolean {
  const [entityType, bundle] = type.split('--');
  return (entityType === bundle && !['user', 'file'].includes(entityType!)) || /_type$/.test(entityType!) || entityType === 'taxonomy_vocabulary';
}

export interface Failure {
  type: string;
  uuid: string;
  reason: string;
}

export interface ImportReport {
  counts: BundleCounts[];
  failures: Failure[];
  /** Resource types the source serves and this farm has not: skipped. */
  unsupported: string[];
  /** Fields the source's records have and this farm's have not, by resource type. */
  notCarried: Map<string, Set<string>>;
  /** Accounts created here without a password: `tilth user password` gives them one. */
  needPassword: string[];
  /** Source users that were already here under the same name (with another UUID). */
  matchedUsers: string[];
  pruned: number;
  assetsRebuilt: number;
}

export interface ImportOptions {
  prune?: boolean;
  /** Carry each new record's past revisions too (a Tilth source serves them; one request per record). */
  revisions?: boolean;
}

/** Who stores users: an administrator with no account here, so nothing is owned by the import itself. */
export function systemPrincipal(): Principal {
  return { userId: null, userUuid: null, userName: 'import', roles: ['administrator'], scopes: [USER_ACCESS_SCOPE], clientId: null, tokenChainId: null, permissions: effectivePermissions(['administrator'], [USER_ACCESS_SCOPE]) };
}

/** The resource types the source serves (its /api links), split into what this farm has and what it has not. */
export async function sourceTypes(source: FarmSource, ctx: AppContext): Promise<{ supported: ResourceType[]; unsupported: string[] }> {
  const index = await source.getJson('/api');
  const links = index?.links && typeof index.links === 'object' ? Object.keys(index.links) : [];
  if (!links.length) throw new SourceError(`${source.base}/api lists no resource types, so it is not a farm's API: give --url the farm's own address (e.g. https://farm.example.org), that of a farmOS 2.x or 3.x server or a Tilth.`);
  const supported: ResourceType[] = [];
  const unsupported: string[] = [];
  for (const type of links.filter((k) => k.includes('--') && !isConfigType(k))) {
    const rt = ctx.registry.get(type);
    if (rt && (IMPORT_ORDER as readonly string[]).includes(rt.entityType.entityType)) supported.push(rt);
    else unsupported.push(type);
  }
  const rank = (rt: ResourceType) => IMPORT_ORDER.indexOf(rt.entityType.entityType as (typeof IMPORT_ORDER)[number]);
  supported.sort((a, b) => rank(a) - rank(b) || a.type.localeCompare(b.type));
  return { supported, unsupported: unsupported.sort() };
}

export class FarmImport {
  private readonly services: JsonApiServices;
  private readonly map: ImportMap;
  private readonly files: FileStore;
  private readonly w: WriteContext;
  private readonly report: ImportReport = { counts: [], failures: [], unsupported: [], notCarried: new Map(), needPassword: [], matchedUsers: [], pruned: 0, assetsRebuilt: 0 };
  /** UUIDs the source listed this run, by entity type (what --prune keeps). */
  private readonly seen = new Map<string, Set<string>>();
  /** Resource types read whole this run (no mark from an earlier one): `seen` has all their UUIDs. */
  private readonly readWhole = new Set<string>();
  private readonly placements: Placements;
  /** Source UUIDs that are this farm's own records (isLocal): references to them are left out (records.ts). */
  private readonly conflicts = new Set<string>();

  constructor(
    private readonly ctx: AppContext,
    private readonly source: FarmSource,
    private readonly progress: Progress,
    private readonly options: ImportOptions = {},
  ) {
    this.services = new JsonApiServices(ctx);
    // The farm's own (context.ts): one Placements and one FileStore per farm.
    this.placements = ctx.services.placements;
    this.map = new ImportMap(source.base);
    this.files = ctx.services.files;
    this.w = { services: this.services, message: `Imported from ${source.base} on ${new Date().toISOString().slice(0, 10)}`, userIds: new Map(), userRemap: new Map(), conflicts: this.conflicts, system: systemPrincipal() };
  }

  async run(): Promise<ImportReport> {
    const { supported, unsupported } = await sourceTypes(this.source, this.ctx);
    this.report.unsupported = unsupported;
    for (const type of unsupported) this.progress.note(`Skipped ${type}: this farm has no such record type.`, { skipped: type });
    await this.loadUsers();
    for (const entityType of IMPORT_ORDER) {
      const bundles = supported.filter((rt) => rt.entityType.entityType === entityType);
      if (!bundles.length) continue;
      const sinces = new Map<string, number | null>();
      for (const rt of bundles) sinces.set(rt.type, await this.changedSince(rt));
      this.progress.phase(bundles[0]!.entityType.labelPlural, await this.expected(bundles, sinces));
      if (entityType === 'file') await this.sweepUnrecordedBytes();
      const deferred: Array<{ rt: ResourceType; resource: SourceResource; counts: BundleCounts }> = [];
      const marks: Array<{ rt: ResourceType; counts: BundleCounts; at: number | null }> = [];
      for (const rt of bundles) {
        const counts: BundleCounts = { type: rt.type, read: 0, created: 0, updated: 0, unchanged: 0, failed: 0 };
        this.report.counts.push(counts);
        let last = '';
        const since = sinces.get(rt.type) ?? null;
        if (since === null) this.readWhole.add(rt.type);
        // The next run reads from the source's time now, less a margin: a record written at the source
        // while this run reads (after its page went by) is read by the next run.
        marks.push({ rt, counts, at: this.source.sourceNow === null ? null : this.source.sourceNow - MARK_MARGIN_SECONDS });
        try {
          for await (const page of this.source.pagesInLanes(rt.type, rt.entityType.internalId, since === null ? {} : { changedSince: since })) {
            counts.read += page.length;
            for (const r of page) this.seenSet(entityType).add(r.id);
            const later = await this.storePage(rt, page, counts);
            deferred.push(...later.map((resource) => ({ rt, resource, counts })));
            last = page[page.length - 1]!.id;
            this.progress.advance(page.length);
          }
        } catch (error) {
          // A page the source would not give (after its retries): the rest of this bundle is
          // unknown, so named as such; the other bundles go on, and --prune does not run.
          if (!(error instanceof SourceError)) throw error;
          this.fail(rt, { type: rt.type, id: last ? `(the page after ${last})` : '(its first page)' }, error, counts);
        }
      }
      await this.retryDeferred(deferred);
      // A bundle read to its end with nothing failed: the next run asks only for what changed since.
      // One with a failure is read whole again, so that what failed is tried again.
      for (const m of marks) if (m.at !== null && !m.counts.failed && !READ_WHOLE.has(entityType)) await this.map.setMark(this.ctx.db.knex, m.rt.type, m.at);
      this.progress.done();
      if (entityType === 'user') await this.loadUsers();
    }
    const streams = supported.find((rt) => rt.entityType.entityType === 'data_stream');
    if (streams) await this.copyReadings(streams);
    if (this.options.prune) await this.prune(supported);
    await this.rebuildPlacements();
    return this.report;
  }

  /**
   * About how many records a phase has, for the time left: the highest of its bundles' own numbers
   * (an entity type's bundles share one numbering; deleted records make it high). Not known (null)
   * when a bundle is read from a mark (only what changed), or the source will not say.
   */
  private async expected(bundles: ResourceType[], sinces: Map<string, number | null>): Promise<number | null> {
    if (bundles.some((rt) => sinces.get(rt.type) !== null)) return null;
    let top = 0;
    for (const rt of bundles) {
      const n = await this.source.highest(rt.type, rt.entityType.internalId).catch(() => null);
      if (n === null) continue;
      top = Math.max(top, n);
    }
    return top || null;
  }

  /** The source time to read a bundle from (records changed at or after it), or null: all of it. */
  private async changedSince(rt: ResourceType): Promise<number | null> {
    if (READ_WHOLE.has(rt.entityType.entityType)) return null;
    return this.map.mark(this.ctx.db.knex, rt.type);
  }

  private seenSet(entityType: string): Set<string> {
    let set = this.seen.get(entityType);
    if (!set) this.seen.set(entityType, (set = new Set()));
    return set;
  }

  /** The users here by UUID, and the source users matched to one of them by name. */
  private async loadUsers(): Promise<void> {
    const rows = (await this.ctx.db.knex(this.services.loader.store.entityType('user').table).select('id', 'uuid')) as Array<{ id: number; uuid: string }>;
    this.w.userIds = new Map(rows.map((r) => [r.uuid, Number(r.id)]));
  }

  /**
   * Store a page: records the map holds with the same digest are left alone; the others are
   * written in one transaction, each in a savepoint of its own so that one that fails is reported
   * and the rest of the page kept. Returns the records to try again at the end of the phase.
   */
  private async storePage(rt: ResourceType, page: SourceResource[], counts: BundleCounts): Promise<SourceResource[]> {
    const entityType = rt.entityType.entityType;
    // Users are matched by name on every run (a matched user is not in the map): their records' references follow them.
    const users = entityType === 'user' ? await this.matchPageUsers(page) : null;
    const known = await this.map.rows(this.ctx.db.knex, entityType, page.map((r) => r.id));
    const todo: Array<{ resource: SourceResource; digest: string; bytes?: { tmp: string; size: number; sha256: string }; history?: SourceResource[] }> = [];
    for (const resource of page) {
      this.noteNotCarried(rt, resource);
      const digest = digestOf(resource);
      if (known.get(resource.id)?.digest === digest) counts.unchanged++;
      else todo.push({ resource, digest });
    }
    if (!todo.length) return [];
    // Past revisions of records new to the map, and file bytes, come before the transaction: no
    // transaction waits on the network.
    if (this.options.revisions && rt.entityType.revisionId && savesNewRevision(rt)) {
      for (const t of todo) if (!known.has(t.resource.id)) t.history = await this.source.history(rt.type, t.resource.id, t.resource.attributes?.[rt.entityType.revisionId]);
    }
    if (entityType === 'file') {
      for (const t of [...todo]) {
        try {
          t.bytes = await this.download(t.resource);
        } catch (error) {
          this.fail(rt, t.resource, error, counts);
          todo.splice(todo.indexOf(t), 1);
        }
      }
    }
    const deferred: SourceResource[] = [];
    const placed: string[] = [];
    try {
      // Most pages store whole: one transaction, no savepoint per record (each costs statements and
      // time). A page on which a record fails, or waits for a later one, is stored again with a
      // savepoint per record, so that only that record is left out. Users and files always are
      // (account rules; bytes placed once).
      if (entityType !== 'user' && entityType !== 'file' && (await this.storeWhole(rt, todo, known, counts))) return [];
      await this.ctx.db.knex.transaction(async (trx) => {
        await this.placements.requestRebuild(trx);
        const here = await this.recordsHere(trx, rt, todo.map((t) => t.resource.id));
        for (const t of todo) {
          if (users?.has(t.resource.id)) {
            counts.unchanged++;
            continue;
          }
          if (this.isLocal(t.resource.id, here, known)) {
            this.fail(rt, t.resource, this.localConflict(rt), counts);
            this.conflicts.add(t.resource.id);
            continue;
          }
          try {
            const created = await trx.transaction(async (sp) => {
              const c = await this.storeOne(sp, rt, t.resource, here.get(t.resource.id) ?? null, t.bytes, placed, t.history);
              await this.map.recordMany(sp, entityType, [this.entry(rt, t.resource, t.digest, t.bytes?.sha256)]);
              return c;
            });
            if (created) counts.created++;
            else counts.updated++;
          } catch (error) {
            if (isMissingOwnType(error, entityType)) deferred.push(t.resource);
            else this.fail(rt, t.resource, error, counts);
          }
        }
      });
    } catch (error) {
      for (const path of placed) this.files.remove(path);
      throw error;
    } finally {
      for (const t of todo) if (t.bytes) this.files.discard(t.bytes.tmp);
    }
    return deferred;
  }

  /** A page's records in one transaction with their map rows (one statement per 100); false, and nothing written, when one of them fails (or is this farm's own). */
  private async storeWhole(rt: ResourceType, todo: Array<{ resource: SourceResource; digest: string; history?: SourceResource[] }>, known: Map<string, MapRow>, counts: BundleCounts): Promise<boolean> {
    const tally = { created: 0, updated: 0 };
    try {
      await this.ctx.db.knex.transaction(async (trx) => {
        await this.placements.requestRebuild(trx);
        const here = await this.recordsHere(trx, rt, todo.map((t) => t.resource.id));
        // Stored a record at a time instead, which names it.
        if (todo.some((t) => this.isLocal(t.resource.id, here, known))) throw this.localConflict(rt);
        // Records new here (without past revisions to carry) go in together, a statement per table;
        // the rest one at a time. Together fails as a whole, on a record that refers to another of
        // the same page (a parent): its savepoint is undone and they too go one at a time.
        const fresh = todo.filter((t) => !here.has(t.resource.id) && !t.history?.length);
        const together = fresh.length > 1 && (await trx.transaction((sp) => writeNewRecords(sp, rt, fresh.map((t) => t.resource), this.w)).then(() => true, () => false));
        if (together) tally.created += fresh.length;
        const done = new Set(together ? fresh : []);
        for (const t of todo.filter((t) => !done.has(t))) {
          if (await this.storeOne(trx, rt, t.resource, here.get(t.resource.id) ?? null, undefined, [], t.history)) tally.created++;
          else tally.updated++;
        }
        await this.map.recordMany(trx, rt.entityType.entityType, todo.map((t) => this.entry(rt, t.resource, t.digest)));
      });
    } catch {
      // Rolled back whole: the page is stored again a record at a time, which names what failed.
      return false;
    }
    counts.created += tally.created;
    counts.updated += tally.updated;
    return true;
  }

  /**
   * A record here with a source record's UUID that no run of this import from this source stored
   * (the map holds what one did, killed or not: its row is written with the record): one of this
   * farm's own, or another source's. It is never written: a source must not be able to take over
   * an account or change a record of this farm by serving its UUID.
   */
  private isLocal(uuid: string, here: Map<string, unknown>, known: Map<string, MapRow>): boolean {
    return here.has(uuid) && !known.has(uuid);
  }

  private localConflict(rt: ResourceType): ApiError {
    return new ApiError(409, `this farm has a ${rt.entityType.entityType} of its own with this UUID (not one imported from ${this.source.base}): it is left as it is.`);
  }

  private entry(rt: ResourceType, resource: SourceResource, digest: string, sha256?: string): MapEntry {
    return { resource, changed: parseTimestamp(resource.attributes?.changed), digest, bundle: rt.bundle.bundle, sha256: sha256 ?? null };
  }

  /** The records of a page already here, by UUID, in two statements (a record of another bundle by its bundle's name). */
  private async recordsHere(db: Db, rt: ResourceType, uuids: string[]): Promise<Map<string, EntityRecord | string>> {
    const entityType = rt.entityType.entityType;
    const rows = uuids.length ? ((await db(rt.entityType.table).whereIn('uuid', uuids).select('id', 'uuid', 'bundle')) as Array<{ id: number; uuid: string; bundle: string }>) : [];
    const out = new Map<string, EntityRecord | string>();
    for (const r of rows) if (r.bundle !== rt.bundle.bundle) out.set(r.uuid, r.bundle);
    const ids = rows.filter((r) => r.bundle === rt.bundle.bundle).map((r) => Number(r.id));
    for (const record of ids.length ? await this.services.loader.store.load(db, entityType, ids, undefined, [rt.bundle.bundle]) : []) out.set(record.uuid, record);
    return out;
  }

  /** Store one record (the caller notes it in the map); true when it was created. */
  private async storeOne(db: Db, rt: ResourceType, resource: SourceResource, found: EntityRecord | string | null, bytes: { tmp: string; size: number; sha256: string } | undefined, placed: string[], history: SourceResource[] = []): Promise<boolean> {
    const entityType = rt.entityType.entityType;
    if (typeof found === 'string') throw new ApiError(409, `${resource.id} is a ${entityType}--${found} here, not a ${rt.type}.`);
    const current = found;
    const extra = new Map<string, ItemValue | ItemValue[]>();
    if (bytes) {
      // The source's name and type are reduced and checked as an upload's are: a hostile source's
      // `../../…/evil.sh` is `evil.sh` here, and a type that is not one is the name's.
      const filename = safeFilename(String(resource.attributes?.filename ?? 'file'));
      const path = await this.placeImported(bytes, resource, current, filename);
      placed.push(path);
      extra.set('path', path);
      extra.set('filename', filename);
      extra.set('filemime', mimeTypeOr(resource.attributes?.filemime, filename));
      extra.set('filesize', bytes.size);
      extra.set('status', resource.attributes?.status !== false);
    }
    try {
      await writeRecord(db, rt, resource, current, this.w, extra, history);
    } catch (error) {
      // Its savepoint is rolled back and the page goes on: the bytes it placed go too.
      const path = extra.get('path');
      if (typeof path === 'string') this.files.remove(path);
      throw error;
    }
    if (bytes && current) {
      const old = current.values.get('path');
      if (typeof old === 'string' && old !== extra.get('path')) this.files.remove(old);
    }
    return !current;
  }

  /**
   * Where an imported file's bytes go: the path of the source's `private://` URI, as farmOS's own
   * migration keeps it, so that links to the file (in notes, bookmarks, other systems) still work
   * with this farm's address. When that path is taken here (or is not one the file store keeps, or
   * the source's URI is not private), under `farm/file/<month>/` instead, and the record is named
   * in the progress notes. Bytes a killed run left at the path without its record (no record has
   * the path, and they are these very bytes) are taken as this record's.
   */
  private async placeImported(bytes: { tmp: string; sha256: string }, resource: SourceResource, current: EntityRecord | null, filename: string): Promise<string> {
    const uri = (resource.attributes?.uri as { value?: unknown } | undefined)?.value;
    const wanted = typeof uri === 'string' && uri.startsWith(PRIVATE_SCHEME) ? uri.slice(PRIVATE_SCHEME.length) : null;
    if (wanted !== null) {
      const kept = this.files.placeAt(bytes.tmp, wanted);
      if (kept) return kept;
      if (safeStoredPath(wanted) && current?.values.get('path') !== wanted && (await this.leftByKilledRun(wanted, bytes.sha256))) {
        this.files.remove(wanted);
        const again = this.files.placeAt(bytes.tmp, wanted);
        if (again) return again;
      }
    }
    const path = this.files.place(bytes.tmp, IMPORTED_FILES_ENTITY, filename);
    const why = wanted === null ? `its URI (${typeof uri === 'string' ? uri : 'none'}) is not a private:// one` : safeStoredPath(wanted) ? `${PRIVATE_SCHEME}${wanted} is taken here` : `${PRIVATE_SCHEME}${wanted} is not a path this farm keeps files at`;
    this.progress.note(`Stored file--file ${resource.id} at ${PRIVATE_SCHEME}${path}: ${why}.`, { moved: resource.id, uri: `${PRIVATE_SCHEME}${path}` });
    return path;
  }

  /** Bytes at a stored path that no file record has, equal to these: what a killed run of this import placed. */
  private async leftByKilledRun(path: string, sha256: string): Promise<boolean> {
    const table = this.services.loader.store.entityType('file').table;
    if (await this.ctx.db.knex(table).where('path', path).first('id')) return false;
    return (await storedSha256(this.files, path)) === sha256;
  }

  /**
   * Bytes a killed run placed under `farm/file/` (where only this command puts files) whose
   * record's transaction never committed: removed, or they would stay there unreferenced.
   */
  private async sweepUnrecordedBytes(): Promise<void> {
    const dir = join(this.files.root, IMPORTED_FILES_DIR);
    if (!existsSync(dir)) return;
    const onDisk = (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[]).filter((d) => d.isFile()).map((d) => relative(this.files.root, join(d.parentPath ?? d.path, d.name)).split(sep).join('/'));
    if (!onDisk.length) return;
    const table = this.services.loader.store.entityType('file').table;
    const recorded = new Set<string>();
    for (const part of chunks(onDisk, 500)) for (const r of (await this.ctx.db.knex(table).whereIn('path', part).select('path')) as Array<{ path: string }>) recorded.add(r.path);
    for (const path of onDisk) if (!recorded.has(path)) this.files.remove(path);
  }

  /**
   * A file's bytes, downloaded to a temporary file with their size and SHA-256; refused when the
   * source does not state its size (any answer, an endless one or another server's, would be
   * stored as the file), and when the bytes are not that size (read no further than it).
   */
  private async download(resource: SourceResource): Promise<{ tmp: string; size: number; sha256: string }> {
    const uri = resource.attributes?.uri as { url?: string; value?: string } | undefined;
    if (!uri?.url) throw new SourceError('the source gives no uri.url to download it from.');
    const filesize = resource.attributes?.filesize;
    const stated = typeof filesize === 'number' || (typeof filesize === 'string' && /^\d+$/.test(filesize)) ? Number(filesize) : NaN;
    if (!Number.isSafeInteger(stated) || stated < 0) throw new SourceError('the source does not state its filesize, so its bytes cannot be checked; not downloaded.');
    const body = await this.source.download(uri.url);
    const hash = createHash('sha256');
    let read = 0;
    const hashing = new Transform({
      transform(chunk: Buffer, _enc, done) {
        read += chunk.length;
        if (read > stated) {
          body.destroy(); // the source may send for ever: its connection goes
          return done(new ApiError(413, `its bytes are longer than the filesize ${stated} the source states; not read further.`));
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const received = await this.files.receive(Object.assign(body.pipe(hashing), { headers: {} }), SOURCE_FILE_LIMITS);
    this.progress.advance(0, received.size);
    if (stated !== received.size) {
      this.files.discard(received.tmp);
      throw new SourceError(`its bytes are ${received.size} long, but the source says filesize ${stated}.`);
    }
    return { ...received, sha256: hash.digest('hex') };
  }

  /** Source users here under another UUID (the same name): their records' references follow them. */
  get userRemap(): Map<string, string> {
    return this.w.userRemap;
  }

  /** Match the source's users to this farm's, without copying anything (for --verify-only). */
  async matchUsers(): Promise<Map<string, string>> {
    await this.loadUsers();
    const rt = this.ctx.registry.get('user--user');
    if (rt) for await (const page of this.source.pages(rt.type, rt.entityType.internalId)) await this.matchPageUsers(page);
    return this.w.userRemap;
  }

  /** Source users already here under the same name with another UUID: noted, and their records' references follow them. */
  private async matchPageUsers(resources: SourceResource[]): Promise<Set<string>> {
    const matched = new Set<string>();
    const table = this.services.loader.store.entityType('user').table;
    for (const r of resources) {
      const name = r.attributes?.name;
      if (typeof name !== 'string' || !name) {
        matched.add(r.id); // the anonymous user: every farm has its own
        continue;
      }
      if (this.w.userIds.has(r.id)) continue;
      const here = (await this.ctx.db.knex(table).whereRaw('lower(name) = ?', [name.toLowerCase()]).first('uuid')) as { uuid: string } | undefined;
      if (here && here.uuid !== r.id) {
        this.w.userRemap.set(r.id, here.uuid);
        this.report.matchedUsers.push(name);
        matched.add(r.id);
      } else if (!here) this.report.needPassword.push(name);
    }
    return matched;
  }

  /** Records that waited for a record of their own type (a parent on a later page): tried again until no more can be stored. */
  private async retryDeferred(deferred: Array<{ rt: ResourceType; resource: SourceResource; counts: BundleCounts }>): Promise<void> {
    let left = deferred;
    while (left.length) {
      const next: typeof left = [];
      for (const d of left) {
        const again = await this.storePage(d.rt, [d.resource], d.counts);
        if (again.length) next.push(d);
      }
      if (next.length === left.length) {
        for (const d of next) this.fail(d.rt, d.resource, new SourceError('it refers to a record the source did not list (a dangling relationship).'), d.counts);
        return;
      }
      left = next;
    }
  }

  /** Fields the source's record has and this farm's record type has not (a contributed module's): named in the report. */
  private noteNotCarried(rt: ResourceType, resource: SourceResource): void {
    const names = [...Object.keys(resource.attributes ?? {}), ...Object.keys(resource.relationships ?? {})];
    for (const name of names) {
      if (rt.fieldsByName.has(name) || name.startsWith('drupal_internal__') || name === rt.entityType.bundleKey || OWN_MEMBERS.has(name)) continue;
      let set = this.report.notCarried.get(rt.type);
      if (!set) this.report.notCarried.set(rt.type, (set = new Set()));
      set.add(name);
    }
  }

  private fail(rt: ResourceType, resource: SourceResource, error: unknown, counts: BundleCounts): void {
    counts.failed++;
    const reason = reasonOf(error);
    this.report.failures.push({ type: rt.type, uuid: resource.id, reason });
    this.progress.note(`Failed ${rt.type} ${resource.id}: ${reason}`, { failed: rt.type, uuid: resource.id, reason });
  }

  /**
   * Each data stream's readings, replaced when they differ from what was copied last time, a page
   * at a time (readings.ts): a stream copied before is first summed up at the source (one read);
   * only when that differs, or the stream is new here, are its readings read again and written, in
   * one transaction per stream (a stream is never left half copied), a page of them at a time.
   * Counted by stream, in the summary as in the progress lines: a stream's readings are copied
   * whole or not at all, and which of the readings of a replaced stream differed is not known.
   */
  private async copyReadings(rt: ResourceType): Promise<void> {
    const uuids = [...(this.seen.get('data_stream') ?? [])];
    if (!uuids.length) return;
    this.progress.phase(READINGS_BY_STREAM, uuids.length);
    const counts: BundleCounts = { type: READINGS_COUNTS, read: 0, created: 0, updated: 0, unchanged: 0, failed: 0 };
    this.report.counts.push(counts);
    const known = await this.map.rows(this.ctx.db.knex, 'data_stream_readings', uuids);
    for (const uuid of uuids) {
      try {
        const recorded = known.get(uuid)?.digest;
        if (recorded) {
          const there = await sourceDigest(this.source, uuid);
          if (there.digest() === recorded) {
            counts.read++;
            counts.unchanged++;
            this.progress.advance(1);
            continue;
          }
        }
        // Read from the source first, into a file: the transaction that replaces the readings waits
        // on the disk only, never on the source.
        const spooled = await spoolSourceReadings(this.source, uuid, this.files.temporaryPath());
        try {
          await this.ctx.db.knex.transaction(async (trx) => {
            const stream = await this.services.loader.store.findByUuid(trx, 'data_stream', uuid);
            if (!stream) throw new SourceError('its data stream was not stored.');
            const before = Number(((await trx(READINGS_TABLE).where('stream_id', stream.id).count({ n: '*' })) as Array<{ n: number | string }>)[0]!.n);
            await trx(READINGS_TABLE).where('stream_id', stream.id).delete();
            for await (const page of spooledReadings(spooled.file)) {
              await insertReadings(trx, page.map(([timestamp, value]) => ({ streamId: stream.id, timestamp, value })));
            }
            // What is written is what is summed up: the map's digest is of the readings stored.
            await this.map.recordMany(trx, 'data_stream_readings', [{ resource: { type: 'data_stream_readings', id: uuid }, changed: null, digest: spooled.digest.digest(), bundle: rt.bundle.bundle }]);
            counts.read++;
            if (before || recorded) counts.updated++;
            else counts.created++;
          });
        } finally {
          spooled.discard();
        }
      } catch (error) {
        counts.failed++;
        this.report.failures.push({ type: 'data_stream readings', uuid, reason: reasonOf(error) });
        this.progress.note(`Failed the readings of data stream ${uuid}: ${reasonOf(error)}`, { failed: 'readings', uuid });
      }
      this.progress.advance(1);
    }
    this.progress.done();
  }

  /** --prune: delete what this source's earlier runs copied and it no longer lists. */
  private async prune(supported: ResourceType[]): Promise<void> {
    if (this.report.failures.length) {
      this.progress.note('Not pruning: some records failed, and what the source lists is not known for certain.');
      return;
    }
    const store = this.services.loader.store;
    // Bundles read from a mark listed only what changed: the rest of their UUIDs, their numbers only.
    for (const rt of supported.filter((r) => !this.readWhole.has(r.type))) {
      try {
        for await (const page of this.source.pagesInLanes(rt.type, rt.entityType.internalId, { idsOnly: true })) for (const r of page) this.seenSet(rt.entityType.entityType).add(r.id);
      } catch (error) {
        if (!(error instanceof SourceError)) throw error;
        this.progress.note(`Not pruning: listing ${rt.type} failed (${error.message}).`);
        return;
      }
    }
    const knex = this.ctx.db.knex;
    // Referencing records first (logs, then quantities, assets…): the reverse of IMPORT_ORDER.
    const types = [...IMPORT_ORDER].reverse().filter((entityType) => supported.some((rt) => rt.entityType.entityType === entityType));
    const gone = new Map<string, string[]>();
    const going = new Map<string, Set<number>>();
    for (const entityType of types) {
      const seen = this.seen.get(entityType) ?? new Set();
      const uuids = (await this.map.uuids(knex, entityType)).filter((u) => !seen.has(u));
      gone.set(entityType, uuids);
      const ids = new Set<number>();
      for (const part of chunks(uuids, 500)) for (const r of (await knex(store.entityType(entityType).table).whereIn('uuid', part).select('id')) as Array<{ id: number }>) ids.add(Number(r.id));
      going.set(entityType, ids);
    }
    // A record that a record staying here references is kept, as a DELETE refuses it
    // (entities/reference-integrity.ts); references among the records going do not count, whatever
    // their order (a sensor and its data stream name each other). Settled across the types first,
    // then checked again in each deletion once its records are locked.
    for (let more = true; more; ) {
      more = false;
      for (const [entityType, ids] of going) {
        const { kept } = await splitReferenced(knex, store, entityType, [...ids], going);
        for (const id of kept.keys()) ids.delete(id);
        more ||= kept.size > 0;
      }
    }
    for (const entityType of types) {
      const uuids = gone.get(entityType)!;
      if (!uuids.length) continue;
      const table = store.entityType(entityType).table;
      const paths: string[] = [];
      const notPruned: Array<{ uuid: string; line: string }> = [];
      let keptCount = 0;
      await knex.transaction(async (trx) => {
        const rows: Array<{ id: number; uuid: string; path?: string | null }> = [];
        for (const part of chunks(uuids, 500)) rows.push(...((await trx(table).whereIn('uuid', part).select(entityType === 'file' ? ['id', 'uuid', 'path'] : ['id', 'uuid'])) as typeof rows));
        await this.placements.requestRebuild(trx);
        // A server may be serving this database meanwhile (a farm synced again while in use): on
        // PostgreSQL the records are locked, then the records whose references go, as an API
        // DELETE locks them (entities/deletion-locks.ts), so that a save of one waits for this
        // instead of deadlocking with it or having its new reference to a pruned record missed.
        const ids = rows.map((r) => Number(r.id));
        await lockRows(trx, table, ids);
        const locked = await lockForDeletion(trx, store, entityType, ids);
        const { deletable, kept } = await splitReferenced(trx, store, entityType, ids, going);
        // The holders of the records kept are not changed: found again for those deleted.
        await store.delete(trx, entityType, deletable, kept.size && locked ? await store.holdersOf(trx, entityType, deletable) : locked);
        for (const id of kept.keys()) going.get(entityType)!.delete(id);
        for (const record of await store.load(trx, entityType, [...kept.keys()])) {
          notPruned.push({ uuid: record.uuid, line: `${recordName(record)} is gone from the source, and not pruned: it is referenced by ${await describeReferrers(trx, store, kept.get(record.id)!)}.` });
        }
        // A record kept stays in the map: a later run prunes it once nothing here names it.
        const keptUuids = new Set(rows.filter((r) => kept.has(Number(r.id))).map((r) => r.uuid));
        keptCount = keptUuids.size;
        await this.map.forget(trx, entityType, uuids.filter((u) => !keptUuids.has(u)));
        for (const r of rows) if (typeof r.path === 'string' && !keptUuids.has(r.uuid)) paths.push(r.path);
      });
      // A pruned file's bytes go once its record is gone for good.
      for (const path of paths) this.files.remove(path);
      for (const { uuid, line } of notPruned) this.progress.note(line, { notPruned: entityType, uuid });
      const pruned = uuids.length - keptCount;
      this.report.pruned += pruned;
      if (pruned) this.progress.note(`Pruned ${pruned} ${entityType} record(s) the source no longer has.`, { pruned: entityType, count: pruned });
    }
  }

  /**
   * Every asset's locations and groups, computed from the logs now here, a thousand assets per
   * transaction, when a page written (by this run or a killed one) asked for it.
   */
  private async rebuildPlacements(): Promise<void> {
    this.progress.phase('computed locations and groups');
    this.report.assetsRebuilt = await this.placements.rebuildIfPending(this.ctx.db.knex);
    // The adjustments it copied that are dated ahead count from their time: their moments, for the server's timer.
    await this.ctx.services.inventories.recordAllDue(this.ctx.db.knex);
    this.progress.advance(this.report.assetsRebuilt);
    this.progress.done();
  }
}

/** A 404 for a relationship to a record of the same entity type: its target may come later in the phase. */
function isMissingOwnType(error: unknown, entityType: string): boolean {
  return error instanceof MissingReferenceError && error.targetType.startsWith(`${entityType}--`);
}

function reasonOf(error: unknown): string {
  if (error instanceof ValidationError) return error.violations.map((v) => v.detail).join(' ');
  if (error instanceof ApiError) return error.detail;
  if (error instanceof SourceError) return error.message;
  return error instanceof Error ? error.message : String(error);
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
