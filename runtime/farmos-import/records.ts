/**
 * One source record stored as it was, not re-interpreted: its document is read by the same
 * InputReader as a JSON:API write (so every value is checked and every relationship resolved by
 * UUID), then stored by EntityService's verbatim mode (saveVerbatim, createManyVerbatim) with the
 * source's `created`, `changed`, owner and revision author, and a revision whose message says
 * where it came from. None of the save-time behaviour of the API runs (no generated names, no
 * owner defaulting, no birth side effects, no per-record location work: the farm's computed
 * placements are rebuilt once at the end, run.ts), but its bookkeeping does: defaults, revisions,
 * one change-feed row per record. Users are the exception: they are saved as the API saves them
 * (EntityService create and update), which keeps their roles and the account rules, and given
 * their timestamps after.
 */
import { inUnitOfWork } from '../storage/unit-of-work.ts';
import type { ResourceType } from '../model/registry.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { Db, EntityRecord, ItemValue, Reference } from '../storage/records.ts';
import { REVISION_LOG_MESSAGE, storedValues, type RevisionInput } from '../storage/revisions.ts';
import { parseTimestamp } from '../values/timestamps.ts';
import { configIdentifier } from '../model/config-entities.ts';
import { isRole } from '../access/roles.ts';
import type { Principal } from '../access/principal.ts';
import type { FarmServices } from '../context.ts';
import type { InputReader } from '../jsonapi/input.ts';
import { fillDefaults } from '../model/defaults.ts';
import type { SourceResource } from './source.ts';

type Values = Map<string, ItemValue | ItemValue[]>;

/** What the writer needs to know of the run: the message, the users here by UUID, users matched by name. */
export interface WriteContext extends UserMatch {
  /** The farm's services graph (context.ts): its entity service saves, its store reads. */
  services: FarmServices;
  /** Reads a source's document as a JSON:API write's (jsonapi/input.ts): the source speaks the same wire. */
  input: InputReader;
  /** "Imported from <url> on <date>". */
  message: string;
  /** Target user id by target UUID (refreshed after the users phase). */
  userIds: Map<string, number>;
  /** Source user UUID → the UUID of the user here with the same name, when the two differ. */
  userRemap: Map<string, string>;
  /** Who saves users (an administrator without an account of its own here). */
  system: Principal;
}

/**
 * A source document cut to what this resource type may be written with: the source's own numbers,
 * read-only and unknown members left out (run.ts names the unknown ones in its report).
 */
export function cleanDocument(rt: ResourceType, resource: SourceResource, users: UserMatch): { document: unknown } {
  const attributes: Record<string, unknown> = {};
  const relationships: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(resource.attributes ?? {})) {
    const field = rt.fieldsByName.get(name);
    if (field && !field.readOnly && field.type !== 'password') attributes[name] = value;
  }
  for (const [name, member] of Object.entries(resource.relationships ?? {})) {
    const field = rt.fieldsByName.get(name);
    if (name === rt.entityType.bundleKey || !field || field.readOnly || !member || !('data' in member)) continue;
    relationships[name] = { data: remapIdentifiers(field, member.data, users) };
  }
  return { document: { data: { type: rt.type, id: resource.id, attributes, relationships } } };
}

/** How source users are found here: by UUID, or by name when the two farms' UUIDs differ. */
export interface UserMatch {
  userIds: Map<string, number>;
  userRemap: Map<string, string>;
  /**
   * UUIDs the source serves that are records of this farm's own (run.ts: never written): a source
   * record's reference to one is left out, or a source could make this farm's account the author
   * or owner of its records, or log its moves of this farm's assets.
   */
  conflicts: ReadonlySet<string>;
}

/**
 * Users matched by name get this farm's UUID, and a user who is not here (the anonymous user, an
 * account the source would not list) is left out rather than failing the record; roles get this
 * farm's identifiers (derived from their names).
 */
function remapIdentifiers(field: FieldDescriptor, data: unknown, users: UserMatch): unknown {
  const one = (item: any): any => {
    if (!item || typeof item !== 'object') return item;
    if (typeof item.id === 'string' && users.conflicts.has(item.id)) return null;
    if (field.target?.entityType === 'user_role') {
      const name = item.meta?.drupal_internal__target_id;
      return typeof name === 'string' && isRole(name) ? configIdentifier('user_role', name) : null;
    }
    if (item.type !== 'user--user') return item;
    const id = users.userRemap.get(item.id) ?? item.id;
    return users.userIds.has(id) ? { ...item, id } : null;
  };
  return Array.isArray(data) ? data.map(one).filter((x) => x !== null) : one(data);
}

/** A user reference from a source relationship member, or undefined when the source did not send one. */
function userReference(resource: SourceResource, name: string, w: WriteContext): Reference | null | undefined {
  const member = resource.relationships?.[name];
  if (!member || !('data' in member)) return undefined;
  const data = member.data as { id?: string } | null;
  if (!data?.id || w.conflicts.has(data.id)) return null;
  const id = w.userIds.get(w.userRemap.get(data.id) ?? data.id);
  return id === undefined ? null : { targetId: id, meta: {} };
}

/**
 * The automatic fields as the source has them: created, changed and revision_created from its
 * attributes, the author (uid) and revision author from its relationships. A field the source does
 * not send gets what a new record would get (`now`, or nobody; `isNew`: the record is new here):
 * never the importing user.
 */
function sourceAutomatics(
  rt: ResourceType,
  resource: SourceResource,
  values: Values,
  w: WriteContext,
  { now, isNew }: { now: number; isNew: boolean },
): { revisionCreated: number; revisionUser: number | null } {
  for (const field of rt.bundle.fields) {
    if (!field.auto || field.computed || field.storage.kind === 'none') continue;
    if (field.auto === 'created' || field.auto === 'changed') {
      const t = parseTimestamp(resource.attributes?.[field.name]);
      if (t !== null) values.set(field.name, t);
      else if (isNew && !values.has(field.name)) values.set(field.name, now);
    } else if (!values.has(field.name) || isNew) {
      const ref = userReference(resource, field.name, w);
      if (ref !== undefined) values.set(field.name, field.multiple ? (ref ? [ref] : []) : ref);
      else if (isNew && !values.has(field.name)) values.set(field.name, field.multiple ? [] : null);
    }
  }
  const revisionCreated =
    parseTimestamp(resource.attributes?.revision_created) ?? parseTimestamp(resource.attributes?.changed) ?? now;
  const revisionUser = userReference(resource, 'revision_user', w);
  return { revisionCreated, revisionUser: revisionUser ? revisionUser.targetId : null };
}

/**
 * Store one source record: created when `current` is null, else its fields replaced. Runs inside
 * the caller's transaction (a savepoint of the page's); throws what InputReader throws for a bad
 * value or a relationship to a record that is not here.
 */
export async function writeRecord(
  db: Db,
  rt: ResourceType,
  resource: SourceResource,
  current: EntityRecord | null,
  w: WriteContext,
  extra: Values = new Map(),
  history: SourceResource[] = [],
): Promise<number> {
  const s = w.services;
  const { document } = cleanDocument(rt, resource, w);
  const input = await w.input.read(db, rt, document);
  const now = Math.floor(Date.now() / 1000);
  const values: Values = new Map(input.values);
  for (const [k, v] of extra) values.set(k, v);
  // A user's save and its timestamps after it: one unit of work, one feed row (storage/unit-of-work.ts).
  if (rt.entityType.access === 'user')
    return inUnitOfWork(db, () => writeUser(db, rt, resource, current, values, w, now));
  const { revisionCreated, revisionUser } = importedValues(rt, resource, values, w, { now, isNew: current === null });
  // Older revisions (from a Tilth source, --revisions), for a new record.
  const older = !current && rt.entityType.revisionId ? await olderRevisions(db, rt, history, w, now) : [];
  return s.entities.saveVerbatim(
    db,
    rt,
    resource.id,
    current,
    values,
    { userId: revisionUser, created: revisionCreated, message: w.message },
    older,
    now,
  );
}

/**
 * Store many source records of one bundle that are all new here (a page of a first run) at once:
 * their documents read together (one lookup per target entity type for the page), then stored by
 * EntityService.createManyVerbatim. Each record as writeRecord stores a new one without history.
 * Throws what writeRecord would throw for any one of them; nothing is then known of which: the
 * caller stores them one at a time to find out.
 */
export async function writeNewRecords(
  db: Db,
  rt: ResourceType,
  resources: readonly SourceResource[],
  w: WriteContext,
): Promise<number[]> {
  const inputs = await w.input.readMany(
    db,
    rt,
    resources.map((r) => cleanDocument(rt, r, w).document),
  );
  const now = Math.floor(Date.now() / 1000);
  const rows = resources.map((resource, i) => {
    const values: Values = new Map(inputs[i]!.values);
    const revision = importedValues(rt, resource, values, w, { now, isNew: true });
    return {
      uuid: resource.id,
      values,
      revision: { userId: revision.revisionUser, created: revision.revisionCreated, message: w.message },
    };
  });
  return w.services.entities.createManyVerbatim(db, rt, rows, now);
}

/** The source's automatic fields (sourceAutomatics) and the revision fields saying where the record came from. */
function importedValues(
  rt: ResourceType,
  resource: SourceResource,
  values: Values,
  w: WriteContext,
  { now, isNew }: { now: number; isNew: boolean },
): { revisionCreated: number; revisionUser: number | null } {
  const revision = sourceAutomatics(rt, resource, values, w, { now, isNew });
  if (rt.fieldsByName.has(REVISION_LOG_MESSAGE)) values.set(REVISION_LOG_MESSAGE, w.message);
  if (rt.fieldsByName.has('revision_created')) values.set('revision_created', revision.revisionCreated);
  if (rt.fieldsByName.has('revision_user'))
    values.set('revision_user', revision.revisionUser === null ? null : { targetId: revision.revisionUser, meta: {} });
  return revision;
}

/**
 * A record's past revisions as its source served them (oldest first), each read like the record
 * itself, with its own author, time and message. A revision that no longer reads (it names a
 * record the source has since deleted) is left out: the current one is what must be whole.
 */
async function olderRevisions(
  db: Db,
  rt: ResourceType,
  history: SourceResource[],
  w: WriteContext,
  now: number,
): Promise<RevisionInput[]> {
  const out: RevisionInput[] = [];
  for (const revision of history) {
    try {
      const input = await w.input.read(db, rt, cleanDocument(rt, revision, w).document);
      const values: Values = new Map(input.values);
      const { revisionCreated, revisionUser } = sourceAutomatics(rt, revision, values, w, { now, isNew: true });
      const message =
        typeof revision.attributes?.[REVISION_LOG_MESSAGE] === 'string'
          ? (revision.attributes[REVISION_LOG_MESSAGE] as string)
          : '';
      fillDefaults(rt.bundle.fields, values, now);
      const stored = storedValues(rt, values);
      await w.services.store.revisions.pinTargetRevisions(db, rt, stored);
      out.push({ userId: revisionUser, created: revisionCreated, message, values: stored });
    } catch {
      continue;
    }
  }
  return out;
}

/** A user, saved as the API saves one (roles, account rules), then given the source's timestamps. */
async function writeUser(
  db: Db,
  rt: ResourceType,
  resource: SourceResource,
  current: EntityRecord | null,
  values: Values,
  w: WriteContext,
  now: number,
): Promise<number> {
  const s = w.services;
  const input = { values, secrets: new Map() };
  let id: number;
  if (current) {
    // Only an account an earlier run of this import created is updated (run.ts): the source's copy
    // of it is carried as the account itself would save it, so that user 1 here (the source's
    // first administrator, on a farm that had no accounts) is kept up to date too.
    await s.entities.update(db, current, input, { ...w.system, userId: current.id });
    id = current.id;
  } else {
    id = (await s.entities.create(db, rt, { ...input, id: resource.id }, w.system)).id;
  }
  const times: Values = new Map();
  for (const name of ['created', 'changed']) {
    const t = parseTimestamp(resource.attributes?.[name]);
    if (rt.fieldsByName.has(name)) times.set(name, t ?? now);
  }
  await s.store.update(db, rt, id, times);
  return id;
}
