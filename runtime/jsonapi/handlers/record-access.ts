/**
 * The record a GET route names, read through the view command (usecases/records.ts: 404 for an
 * unknown UUID or one of another bundle, 403 for a record the caller may not read), and the
 * revision `?resourceVersion` asks for.
 */
import type { Request, Response } from 'express';
import type { Knex } from 'knex';
import type { ResourceType } from '../../model/registry.ts';
import type { EntityRecord } from '../../storage/records.ts';
import type { RecordLoader } from '../../farm/loader.ts';
import { notFound, badParameter } from '../../errors.ts';
import { principalOf, type Principal } from '../../access/principal.ts';
import type { RecordCommands } from '../../usecases/records.ts';
import {
  fieldsetsToRead,
  RESOURCE_VERSION_PARAMETER,
  type JsonApiQuery,
  type ResourceVersion,
} from '../query/index.ts';
import type { RequestReader } from './requests.ts';

export class RecordAccess {
  constructor(
    private readonly knex: Knex,
    private readonly loader: RecordLoader,
    private readonly requests: RequestReader,
    private readonly commands: RecordCommands,
  ) {}

  /** The record a GET route names, after checking that the caller may read it. */
  async viewable(
    req: Request,
    res: Response,
    rt: ResourceType,
    id: string | undefined,
    options: { fieldsets?: boolean; validateIncludes?: boolean; withVersion?: boolean } = {},
  ): Promise<{ principal: Principal; query: JsonApiQuery; record: EntityRecord }> {
    const principal = principalOf(res);
    const query = this.requests.query(req, options.validateIncludes === false ? undefined : rt);
    const fieldsets = options.fieldsets ? fieldsetsToRead(query.fields, query.include) : null;
    // `withVersion`: the record's version (for its ETag) read in the record's own statement.
    const record = await this.commands.view(principal, rt, id, {
      fields: fieldsets,
      withVersion: options.withVersion === true && !query.resourceVersion,
    });
    if (!query.resourceVersion) return { principal, query, record };
    return { principal, query, record: await this.version(record, query.resourceVersion, fieldsets) };
  }

  /**
   * The revision `?resourceVersion` asks for, as Drupal's VersionNegotiator finds it: `rel:…`
   * is the current revision (Tilth has no drafts or moderation, so the latest version and the
   * working copy are both the current one); `id:<n>` is that revision of this record, or 404.
   * Reading a revision needs what reading the record needs, checked before.
   */
  async version(
    current: EntityRecord,
    version: ResourceVersion,
    fieldsets: Map<string, Set<string>> | null,
  ): Promise<EntityRecord> {
    const rt = current.rt;
    if (!rt.entityType.revisionId) {
      throw badParameter(
        RESOURCE_VERSION_PARAMETER,
        `${rt.type} resources keep no revisions: remove the ${RESOURCE_VERSION_PARAMETER} parameter.`,
      );
    }
    const missing = () =>
      notFound(`The requested version, identified by \`${version.identifier}\`, could not be found.`, {
        parameter: RESOURCE_VERSION_PARAMETER,
      });
    if (version.kind === 'rel' || version.revisionId === current.revisionId) {
      if (current.revisionId === null) throw missing();
      return { ...current, revisionView: true };
    }
    const revision = await this.loader.store.revisions.find(
      this.knex,
      rt.entityType.entityType,
      current.id,
      version.revisionId,
    );
    if (!revision) throw missing();
    return this.loader.loadRevision(this.knex, current, revision, fieldsets);
  }
}
