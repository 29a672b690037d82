/**
 * Finding the record a route names and checking that the caller may act on it: 404 for an unknown
 * UUID (or one of another bundle), 403 for a record the caller may not read, change or delete,
 * and the revision `?resourceVersion` asks for.
 */
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import type { ResourceType } from '../../model/registry.ts';
import type { Db, EntityRecord } from '../../storage/records.ts';
import type { RecordLoader } from '../../farm/loader.ts';
import { UUID } from '../input.ts';
import { lockToChangeWhere } from '../../storage/locks.ts';
import { notFound, forbidden, badParameter } from '../../errors.ts';
import { assertMayOnType, mayOnRecord, requireAuthenticated } from '../../access/policy.ts';
import { principalOf, type Principal } from '../../access/principal.ts';
import { fieldsetsToRead, RESOURCE_VERSION_PARAMETER, type JsonApiQuery, type ResourceVersion } from '../query/index.ts';
import type { RequestReader } from './requests.ts';

export class RecordAccess {
  constructor(
    private readonly knex: Knex,
    private readonly loader: RecordLoader,
    private readonly requests: RequestReader,
  ) {}

  /** The record with this UUID in this bundle, or 404 (another bundle's UUID is a 404 too). */
  async find(db: Db, rt: ResourceType, uuid: string | undefined, principal: Principal, fields: Map<string, Set<string>> | null = null, options: { withVersion?: boolean } = {}): Promise<EntityRecord> {
    requireAuthenticated(principal);
    const record = uuid && UUID.test(uuid) ? await this.loader.loadByUuid(db, rt.entityType.entityType, uuid.toLowerCase(), rt.bundle.bundle, fields, options) : null;
    if (!record) throw notFound(`There is no ${rt.type} with the id "${uuid}".`, { parameter: 'id' });
    return record;
  }

  /**
   * `find` for a read-modify-write inside `trx`: on PostgreSQL the record's row is locked first, so
   * that concurrent changes of one record (twenty photos added to one log at once) wait for each
   * other and each adds to what the previous one saved, instead of all reading the same field and
   * colliding on its side-table rows. FOR NO KEY UPDATE, as an UPDATE of the row takes
   * (storage/locks.ts lockToChange): it does not wait on the KEY SHARE locks that references to
   * the record take. SQLite's writes are serialised already. Step 1 of the global lock order
   * (storage/locks.ts).
   */
  async findForUpdate(trx: Db, rt: ResourceType, uuid: string | undefined, principal: Principal): Promise<EntityRecord> {
    if (uuid && UUID.test(uuid)) await lockToChangeWhere(trx, rt.entityType.table, 'uuid', uuid.toLowerCase());
    return this.find(trx, rt, uuid, principal);
  }

  /** The record a GET route names, after checking that the caller may read it. */
  async viewable(req: Request, res: Response, rt: ResourceType, id: string | undefined, options: { fieldsets?: boolean; validateIncludes?: boolean; withVersion?: boolean } = {}): Promise<{ principal: Principal; query: JsonApiQuery; record: EntityRecord }> {
    const principal = principalOf(res);
    const query = this.requests.query(req, options.validateIncludes === false ? undefined : rt);
    assertMayOnType(principal, rt.entityType, 'view', 'this resource');
    const fieldsets = options.fieldsets ? fieldsetsToRead(query.fields, query.include) : null;
    // `withVersion`: the record's version (for its ETag) read in the record's own statement.
    const record = await this.find(this.knex, rt, id, principal, fieldsets, { withVersion: options.withVersion === true && !query.resourceVersion });
    this.assertMayOnRecord(principal, record, 'view');
    if (!query.resourceVersion) return { principal, query, record };
    return { principal, query, record: await this.version(record, query.resourceVersion, fieldsets) };
  }

  /**
   * The revision `?resourceVersion` asks for, as Drupal's VersionNegotiator finds it: `rel:…`
   * is the current revision (Tilth has no drafts or moderation, so the latest version and the
   * working copy are both the current one); `id:<n>` is that revision of this record, or 404.
   * Reading a revision needs what reading the record needs, checked before.
   */
  async version(current: EntityRecord, version: ResourceVersion, fieldsets: Map<string, Set<string>> | null): Promise<EntityRecord> {
    const rt = current.rt;
    if (!rt.entityType.revisionId) {
      throw badParameter(RESOURCE_VERSION_PARAMETER, `${rt.type} resources keep no revisions: remove the ${RESOURCE_VERSION_PARAMETER} parameter.`);
    }
    const missing = () => notFound(`The requested version, identified by \`${version.identifier}\`, could not be found.`, { parameter: RESOURCE_VERSION_PARAMETER });
    if (version.kind === 'rel' || version.revisionId === current.revisionId) {
      if (current.revisionId === null) throw missing();
      return { ...current, revisionView: true };
    }
    const revision = await this.loader.store.revisions.find(this.knex, rt.entityType.entityType, current.id, version.revisionId);
    if (!revision) throw missing();
    return this.loader.loadRevision(this.knex, current, revision, fieldsets);
  }

  assertMayOnRecord(principal: Principal, record: EntityRecord, op: 'view' | 'update' | 'delete'): void {
    if (!mayOnRecord(principal, record.rt.entityType, op, record)) {
      const verb = { view: 'GET', update: 'PATCH', delete: 'DELETE' }[op];
      throw forbidden(`The current user is not allowed to ${verb} the selected resource (${record.rt.type} ${record.uuid}).`, { pointer: '/data' });
    }
  }

}
