/**
 * The commands every face runs on records, written once (issue 40 §2): view, create, update and
 * delete (with an `ifMatch` version), each taking the principal and its input. A write is one
 * transaction that takes the steps in this order: lock the record (its row, on PostgreSQL), lock
 * its feed row and compare `ifMatch`, check access to the type and then to the record (the 412
 * only after both, so that a caller who may not write the record learns nothing of its version),
 * read the face's input, save through the entity service, take the record's new version and
 * reload it. It returns the record and its version, and whatever the face's `present` made of
 * them inside the same transaction (a document, so that what it shows is what was committed).
 *
 * Faces translate their wire into these calls (jsonapi/handlers/: a request's body, query and
 * headers) and their answers back; nothing here knows of HTTP but the status the errors carry.
 */
import type { Knex } from 'knex';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { assertMayChangeAuthor, assertMayOnType, requireAuthenticated } from '../access/policy.ts';
import type { Db, EntityRecord } from '../storage/records.ts';
import { lockToChangeWhere } from '../storage/locks.ts';
import { versionOf } from '../storage/change-feed.ts';
import type { RecordLoader } from '../farm/loader.ts';
import type { EntityService, HashedSecrets } from '../entities/service.ts';
import type { EntityInput } from '../entities/input.ts';
import { assertMayOnRecord, recordNotFound } from './access.ts';
import { forbidden } from '../errors.ts';
import { staleVersion, type IfMatch } from './if-match.ts';
import { write } from '../storage/transactions.ts';

/** A record's UUID as a route or form names it: checked here, any case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What a write gives back: the record as saved (with computed fields), its version, and what the face made of them. */
export interface Saved<T> {
  record: EntityRecord;
  /** Its place in the change feed: its ETag, and what the next `ifMatch` names. Null for a record the feed does not know. */
  version: number | null;
  shown: T;
}

/** What the face makes of a saved record inside the write's transaction (its document). */
export type Present<T> = (trx: Db, record: EntityRecord, version: number | null) => Promise<T>;

export class RecordCommands {
  constructor(
    /** The database the commands open their transactions on. */
    readonly knex: Knex,
    private readonly loader: RecordLoader,
    private readonly entities: EntityService,
  ) {}

  /** The record with this UUID in this bundle, or 404 (another bundle's UUID is a 404 too). */
  async find(
    db: Db,
    rt: ResourceType,
    uuid: string | undefined,
    principal: Principal,
    fields: Map<string, Set<string>> | null = null,
    options: { withVersion?: boolean } = {},
  ): Promise<EntityRecord> {
    requireAuthenticated(principal);
    const record =
      uuid && UUID.test(uuid)
        ? await this.loader.loadByUuid(
            db,
            rt.entityType.entityType,
            uuid.toLowerCase(),
            rt.bundle.bundle,
            fields,
            options,
          )
        : null;
    if (!record) throw recordNotFound(rt, uuid);
    return record;
  }

  /**
   * `find` for a read-modify-write inside `trx`: on PostgreSQL the record's row is locked first, so
   * that concurrent changes of one record (twenty photos added to one log at once) wait for each
   * other and each adds to what the previous one saved, instead of all reading the same field and
   * colliding on its side-table rows. FOR NO KEY UPDATE, as an UPDATE of the row takes
   * (storage/locks.ts lockToChangeWhere): it does not wait on the KEY SHARE locks that references
   * to the record take. SQLite's writes are serialised already. Step 1 of the global lock order
   * (storage/locks.ts).
   */
  async findForUpdate(
    trx: Db,
    rt: ResourceType,
    uuid: string | undefined,
    principal: Principal,
  ): Promise<EntityRecord> {
    if (uuid && UUID.test(uuid)) await lockToChangeWhere(trx, rt.entityType.table, 'uuid', uuid.toLowerCase());
    return this.find(trx, rt, uuid, principal);
  }

  /**
   * View: the record the caller may read (the type's permission, then the record's), its current
   * version read in the record's own statement when `withVersion`.
   */
  async view(
    principal: Principal,
    rt: ResourceType,
    uuid: string | undefined,
    options: { fields?: Map<string, Set<string>> | null; withVersion?: boolean } = {},
  ): Promise<EntityRecord> {
    assertMayOnType(principal, rt.entityType, 'view', 'this resource');
    const record = await this.find(this.knex, rt, uuid, principal, options.fields ?? null, {
      withVersion: options.withVersion === true,
    });
    assertMayOnRecord(principal, record, 'view');
    return record;
  }

  /**
   * Create: `read` turns the face's input into an `EntityInput` inside the transaction (it
   * resolves references there); passwords were hashed before it opened (`hashed`).
   */
  async create<T>(
    principal: Principal,
    rt: ResourceType,
    input: { read: (trx: Db) => Promise<EntityInput>; hashed?: HashedSecrets; present: Present<T> },
  ): Promise<Saved<T>> {
    this.assertMayCreate(principal, rt);
    return write(this.knex, async (trx) => {
      const { id } = await this.entities.create(trx, rt, await input.read(trx), principal, input.hashed);
      return this.reloadedIn(trx, rt, id, input.present);
    });
  }

  /**
   * Create inside a write another command opened (ComponentCommands: a log's new quantity; a form's
   * new term named in a reference; `tilth import geo|csv`, imports/run.ts: many records in one, all
   * or nothing), with create's checks.
   */
  async createIn(
    trx: Db,
    principal: Principal,
    rt: ResourceType,
    input: EntityInput,
  ): Promise<{ id: number; uuid: string }> {
    this.assertMayCreate(principal, rt);
    return this.entities.create(trx, rt, input, principal);
  }

  /** What a create needs: the type's permission; and a file is made only with its bytes (FileCommands), as in Drupal. */
  assertMayCreate(principal: Principal, rt: ResourceType): void {
    assertMayOnType(principal, rt.entityType, 'create', `${rt.type} resources`);
    if (rt.entityType.access === 'file') {
      throw forbidden(
        'Files cannot be created with a JSON document: POST the bytes (Content-Type: application/octet-stream) to /api/<entity_type>/<bundle>/<file field>, then reference the file.',
        { record: 'whole' },
      );
    }
  }

  /**
   * Update the record `uuid` names with what `read` makes of the face's input, given the record as
   * it is (locked). `ifMatch`: the write goes ahead only if the record's version is one named.
   */
  async update<T>(
    principal: Principal,
    rt: ResourceType,
    uuid: string | undefined,
    input: {
      ifMatch?: IfMatch;
      read: (trx: Db, record: EntityRecord) => Promise<EntityInput>;
      hashed?: HashedSecrets;
      present: Present<T>;
    },
  ): Promise<Saved<T>> {
    return write(this.knex, async (trx) => {
      const record = await this.lockedForWrite(trx, principal, rt, uuid, 'update', input.ifMatch);
      const entityInput = await input.read(trx, record);
      assertMayChangeAuthor(principal, record, entityInput.values);
      await this.entities.update(trx, record, entityInput, principal, input.hashed);
      return this.reloadedIn(trx, rt, record.id, input.present);
    });
  }

  /** Delete the record `uuid` names (`ifMatch` as for update). */
  async delete(
    principal: Principal,
    rt: ResourceType,
    uuid: string | undefined,
    input: { ifMatch?: IfMatch } = {},
  ): Promise<void> {
    await write(this.knex, async (trx) => {
      const record = await this.lockedForWrite(trx, principal, rt, uuid, 'delete', input.ifMatch);
      await this.entities.delete(trx, record, principal);
    });
  }

  /**
   * The record a write names, locked (its row, then its feed row: the order every save takes
   * them in), after the access checks; then the 412 when `ifMatch` names another version.
   * An unknown UUID is the 404 it always was, `ifMatch` or not.
   */
  async lockedForWrite(
    trx: Db,
    principal: Principal,
    rt: ResourceType,
    uuid: string | undefined,
    op: 'update' | 'delete',
    ifMatch: IfMatch | undefined,
  ): Promise<EntityRecord> {
    const record = await this.findForUpdate(trx, rt, uuid, principal);
    const stale = await staleVersion(trx, record, ifMatch);
    this.assertMayWrite(principal, record, op);
    if (stale) throw stale;
    return record;
  }

  /** What a write of `record` needs: the type's permission, then the record's. */
  assertMayWrite(principal: Principal, record: EntityRecord, op: 'update' | 'delete'): void {
    assertMayOnType(principal, record.rt.entityType, op, 'this resource');
    assertMayOnRecord(principal, record, op);
  }

  /** The record saved in `trx`, reloaded with its computed fields, its new version and what the face shows of it. */
  async reloadedIn<T>(trx: Db, rt: ResourceType, id: number, present: Present<T>): Promise<Saved<T>> {
    const [record] = await this.loader.load(trx, rt.entityType.entityType, [id], null, undefined, [rt.bundle.bundle]);
    const version = await versionOf(trx, rt.entityType.entityType, id);
    return { record: record!, version, shown: await present(trx, record!, version) };
  }
}
