/**
 * The pages of `tilth import farmos` (run-state.ts has the run's state): a page of source records
 * stored in one transaction with its import-map rows, whole when it can be, else a record per
 * savepoint so that one that fails is named; the records already here; users matched by name; the
 * records that waited for a parent later in their phase.
 */
import type { ResourceType } from '../model/registry.ts';
import type { Db, EntityRecord, ItemValue } from '../storage/records.ts';
import { ApiError, MissingReferenceError } from '../errors.ts';
import { mimeTypeOr, safeFilename } from '../files/storage.ts';
import { savesNewRevision } from '../storage/revisions.ts';
import { parseTimestamp } from '../values/timestamps.ts';
import { SourceError, type SourceResource } from './source.ts';
import { digestOf, type MapEntry, type MapRow } from './mapping.ts';
import { writeNewRecords, writeRecord } from './records.ts';
import type { BundleCounts } from './progress.ts';
import type { ImportRun } from './run-state.ts';
import { download, placeImported } from './files.ts';
import { unstorable } from './shapes.ts';
import { write } from '../storage/transactions.ts';

/** Members every Drupal entity serves that are bookkeeping, not data to carry. */
const OWN_MEMBERS = new Set([
  'langcode',
  'default_langcode',
  'revision_default',
  'revision_translation_affected',
  'revision_created',
  'revision_log_message',
  'revision_user',
  'content_translation_source',
  'content_translation_outdated',
  'metatag',
  'path',
]);

/** The users here by UUID, and the source users matched to one of them by name. */
export async function loadUsers(run: ImportRun): Promise<void> {
  const rows = (await run.ctx.db.knex(run.services.store.entityType('user').table).select('id', 'uuid')) as Array<{
    id: number;
    uuid: string;
  }>;
  run.w.userIds = new Map(rows.map((r) => [r.uuid, Number(r.id)]));
}

/**
 * Store a page: records the map holds with the same digest are left alone; the others are
 * written in one transaction, each in a savepoint of its own so that one that fails is reported
 * and the rest of the page kept. Returns the records to try again at the end of the phase.
 */
export async function storePage(
  run: ImportRun,
  rt: ResourceType,
  page: SourceResource[],
  counts: BundleCounts,
): Promise<SourceResource[]> {
  const entityType = rt.entityType.entityType;
  // Users are matched by name on every run (a matched user is not in the map): their records' references follow them.
  const users = entityType === 'user' ? await matchPageUsers(run, page) : null;
  const known = await run.map.rows(
    run.ctx.db.knex,
    entityType,
    page.map((r) => r.id),
  );
  const todo: Array<{
    resource: SourceResource;
    digest: string;
    bytes?: { tmp: string; size: number; sha256: string };
    history?: SourceResource[];
  }> = [];
  const { shape } = await run.source.entryPoint();
  for (const resource of page) {
    noteNotCarried(run, rt, resource);
    // A value of the source's farmOS version this farm cannot hold yet: named, and left for a later run.
    const reason = unstorable(shape, rt, resource);
    if (reason) {
      run.fail(rt, resource, new SourceError(reason), counts);
      continue;
    }
    const digest = digestOf(resource);
    if (known.get(resource.id)?.digest === digest) counts.unchanged++;
    else todo.push({ resource, digest });
  }
  if (!todo.length) return [];
  // Past revisions of records new to the map, and file bytes, come before the transaction: no
  // transaction waits on the network.
  if (run.options.revisions && rt.entityType.revisionId && savesNewRevision(rt)) {
    for (const t of todo)
      if (!known.has(t.resource.id))
        t.history = await run.source.history(rt.type, t.resource.id, t.resource.attributes?.[rt.entityType.revisionId]);
  }
  if (entityType === 'file') {
    for (const t of [...todo]) {
      try {
        t.bytes = await download(run, t.resource);
      } catch (error) {
        run.fail(rt, t.resource, error, counts);
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
    if (entityType !== 'user' && entityType !== 'file' && (await storeWhole(run, rt, todo, known, counts))) return [];
    await write(run.ctx.db.knex, async (trx) => {
      await run.placements.requestRebuild(trx);
      const here = await recordsHere(
        run,
        trx,
        rt,
        todo.map((t) => t.resource.id),
      );
      for (const t of todo) {
        if (users?.has(t.resource.id)) {
          counts.unchanged++;
          continue;
        }
        if (isLocal(t.resource.id, here, known)) {
          run.fail(rt, t.resource, localConflict(run, rt), counts);
          run.conflicts.add(t.resource.id);
          continue;
        }
        try {
          const created = await write(trx, async (sp) => {
            const c = await storeOne(
              run,
              sp,
              rt,
              t.resource,
              here.get(t.resource.id) ?? null,
              t.bytes,
              placed,
              t.history,
            );
            await run.map.recordMany(sp, entityType, [entry(rt, t.resource, t.digest, t.bytes?.sha256)]);
            return c;
          });
          if (created) counts.created++;
          else counts.updated++;
        } catch (error) {
          if (isMissingOwnType(error, entityType)) deferred.push(t.resource);
          else run.fail(rt, t.resource, error, counts);
        }
      }
    });
  } catch (error) {
    for (const path of placed) run.files.remove(path);
    throw error;
  } finally {
    for (const t of todo) if (t.bytes) run.files.discard(t.bytes.tmp);
  }
  return deferred;
}

/** A page's records in one transaction with their map rows (one statement per 100); false, and nothing written, when one of them fails (or is this farm's own). */
async function storeWhole(
  run: ImportRun,
  rt: ResourceType,
  todo: Array<{ resource: SourceResource; digest: string; history?: SourceResource[] }>,
  known: Map<string, MapRow>,
  counts: BundleCounts,
): Promise<boolean> {
  const tally = { created: 0, updated: 0 };
  try {
    await write(run.ctx.db.knex, async (trx) => {
      await run.placements.requestRebuild(trx);
      const here = await recordsHere(
        run,
        trx,
        rt,
        todo.map((t) => t.resource.id),
      );
      // Stored a record at a time instead, which names it.
      if (todo.some((t) => isLocal(t.resource.id, here, known))) throw localConflict(run, rt);
      // Records new here (without past revisions to carry) go in together, a statement per table;
      // the rest one at a time. Together fails as a whole, on a record that refers to another of
      // the same page (a parent): its savepoint is undone and they too go one at a time.
      const fresh = todo.filter((t) => !here.has(t.resource.id) && !t.history?.length);
      const together =
        fresh.length > 1 &&
        (await write(trx, (sp) =>
          writeNewRecords(
            sp,
            rt,
            fresh.map((t) => t.resource),
            run.w,
          ),
        ).then(
          () => true,
          () => false,
        ));
      if (together) tally.created += fresh.length;
      const done = new Set(together ? fresh : []);
      for (const t of todo.filter((t) => !done.has(t))) {
        if (await storeOne(run, trx, rt, t.resource, here.get(t.resource.id) ?? null, undefined, [], t.history))
          tally.created++;
        else tally.updated++;
      }
      await run.map.recordMany(
        trx,
        rt.entityType.entityType,
        todo.map((t) => entry(rt, t.resource, t.digest)),
      );
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
function isLocal(uuid: string, here: Map<string, unknown>, known: Map<string, MapRow>): boolean {
  return here.has(uuid) && !known.has(uuid);
}

function localConflict(run: ImportRun, rt: ResourceType): ApiError {
  return new ApiError(
    409,
    `this farm has a ${rt.entityType.entityType} of its own with this UUID (not one imported from ${run.source.base}): it is left as it is.`,
  );
}

function entry(rt: ResourceType, resource: SourceResource, digest: string, sha256?: string): MapEntry {
  return {
    resource,
    changed: parseTimestamp(resource.attributes?.changed),
    digest,
    bundle: rt.bundle.bundle,
    sha256: sha256 ?? null,
  };
}

/** The records of a page already here, by UUID, in two statements (a record of another bundle by its bundle's name). */
async function recordsHere(
  run: ImportRun,
  db: Db,
  rt: ResourceType,
  uuids: string[],
): Promise<Map<string, EntityRecord | string>> {
  const entityType = rt.entityType.entityType;
  const rows = uuids.length
    ? ((await db(rt.entityType.table).whereIn('uuid', uuids).select('id', 'uuid', 'bundle')) as Array<{
        id: number;
        uuid: string;
        bundle: string;
      }>)
    : [];
  const out = new Map<string, EntityRecord | string>();
  for (const r of rows) if (r.bundle !== rt.bundle.bundle) out.set(r.uuid, r.bundle);
  const ids = rows.filter((r) => r.bundle === rt.bundle.bundle).map((r) => Number(r.id));
  for (const record of ids.length
    ? await run.services.store.load(db, entityType, ids, undefined, [rt.bundle.bundle])
    : [])
    out.set(record.uuid, record);
  return out;
}

/** Store one record (the caller notes it in the map); true when it was created. */
async function storeOne(
  run: ImportRun,
  db: Db,
  rt: ResourceType,
  resource: SourceResource,
  found: EntityRecord | string | null,
  bytes: { tmp: string; size: number; sha256: string } | undefined,
  placed: string[],
  history: SourceResource[] = [],
): Promise<boolean> {
  const entityType = rt.entityType.entityType;
  if (typeof found === 'string')
    throw new ApiError(409, `${resource.id} is a ${entityType}--${found} here, not a ${rt.type}.`);
  const current = found;
  const extra = new Map<string, ItemValue | ItemValue[]>();
  if (bytes) {
    // The source's name and type are reduced and checked as an upload's are: a hostile source's
    // `../../…/evil.sh` is `evil.sh` here, and a type that is not one is the name's.
    const filename = safeFilename(String(resource.attributes?.filename ?? 'file'));
    const path = await placeImported(run, bytes, resource, current, filename);
    placed.push(path);
    extra.set('path', path);
    extra.set('filename', filename);
    extra.set('filemime', mimeTypeOr(resource.attributes?.filemime, filename));
    extra.set('filesize', bytes.size);
    extra.set('status', resource.attributes?.status !== false);
  }
  try {
    await writeRecord(db, rt, resource, current, run.w, extra, history);
  } catch (error) {
    // Its savepoint is rolled back and the page goes on: the bytes it placed go too.
    const path = extra.get('path');
    if (typeof path === 'string') run.files.remove(path);
    throw error;
  }
  if (bytes && current) {
    const old = current.values.get('path');
    if (typeof old === 'string' && old !== extra.get('path')) run.files.remove(old);
  }
  return !current;
}

/** Source users already here under the same name with another UUID: noted, and their records' references follow them. */
export async function matchPageUsers(run: ImportRun, resources: SourceResource[]): Promise<Set<string>> {
  const matched = new Set<string>();
  const table = run.services.store.entityType('user').table;
  for (const r of resources) {
    const name = r.attributes?.name;
    if (typeof name !== 'string' || !name) {
      matched.add(r.id); // the anonymous user: every farm has its own
      continue;
    }
    if (run.w.userIds.has(r.id)) continue;
    const here = (await run.ctx.db.knex(table).whereRaw('lower(name) = ?', [name.toLowerCase()]).first('uuid')) as
      { uuid: string } | undefined;
    if (here && here.uuid !== r.id) {
      run.w.userRemap.set(r.id, here.uuid);
      run.report.matchedUsers.push(name);
      matched.add(r.id);
    } else if (!here) run.report.needPassword.push(name);
  }
  return matched;
}

/** Records that waited for a record of their own type (a parent on a later page): tried again until no more can be stored. */
export async function retryDeferred(
  run: ImportRun,
  deferred: Array<{ rt: ResourceType; resource: SourceResource; counts: BundleCounts }>,
): Promise<void> {
  let left = deferred;
  while (left.length) {
    const next: typeof left = [];
    for (const d of left) {
      const again = await storePage(run, d.rt, [d.resource], d.counts);
      if (again.length) next.push(d);
    }
    if (next.length === left.length) {
      for (const d of next)
        run.fail(
          d.rt,
          d.resource,
          new SourceError('it refers to a record the source did not list (a dangling relationship).'),
          d.counts,
        );
      return;
    }
    left = next;
  }
}

/** Fields the source's record has and this farm's record type has not (a contributed module's): named in the report. */
function noteNotCarried(run: ImportRun, rt: ResourceType, resource: SourceResource): void {
  const names = [...Object.keys(resource.attributes ?? {}), ...Object.keys(resource.relationships ?? {})];
  for (const name of names) {
    if (
      rt.fieldsByName.has(name) ||
      name.startsWith('drupal_internal__') ||
      name === rt.entityType.bundleKey ||
      OWN_MEMBERS.has(name)
    )
      continue;
    let set = run.report.notCarried.get(rt.type);
    if (!set) run.report.notCarried.set(rt.type, (set = new Set()));
    set.add(name);
  }
}

/** A 404 for a relationship to a record of the same entity type: its target may come later in the phase. */
function isMissingOwnType(error: unknown, entityType: string): boolean {
  return error instanceof MissingReferenceError && error.targetType.startsWith(`${entityType}--`);
}
