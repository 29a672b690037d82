/**
 * What the pages read, through the JSON:API face's own parts, so a page can show nothing the API
 * would not: the query is written as the API's query string and parsed by its parser, the page of
 * ids comes from its collection compiler and keyset pager (with the access policy's conditions),
 * the records from farm/loader.ts, and the resource objects and included records from its document
 * writer (which applies field visibility and include access). A list page is a fixed number of
 * statements whatever its rows: one page of ids, one load, one level of includes per path.
 */
import type { Knex } from 'knex';
import type { Principal } from '../access/principal.ts';
import { assertMayOnType, listCondition } from '../access/policy.ts';
import type { ResourceType } from '../model/registry.ts';
import type { JsonApiServices } from '../jsonapi/handlers/services.ts';
import { QueryCompiler, slotName } from '../jsonapi/collection/compile.ts';
import { fetchPageAcrossBundles } from '../jsonapi/collection/page-across-bundles.ts';
import { validateIncludes } from '../jsonapi/include.ts';
import { fieldsetsToRead, parseJsonApiQuery, type JsonApiQuery } from '../jsonapi/query/index.ts';
import { selectRows } from '../storage/sql.ts';
import type { EntityRecord } from '../storage/records.ts';
import type { Resource } from './format.ts';

export interface ListResult {
  resources: Resource[];
  included: Map<string, Resource>;
  /** The cursor and offset of the next page, when there is one. */
  next: { offset: number; cursor?: string } | null;
}

/** Counting stops here: a list says "more than" beyond it, rather than scanning a whole farm. */
export const COUNT_CAP = 1000;

export class WebReads {
  readonly compiler: QueryCompiler;

  constructor(readonly services: JsonApiServices) {
    this.compiler = new QueryCompiler(services.knex, services.ctx.registry, services.ctx.db.sql);
  }

  private get knex(): Knex {
    return this.services.knex;
  }

  /** The API's query for a query string (validated as the API validates it). */
  query(rt: ResourceType, queryString: string): JsonApiQuery {
    const query = parseJsonApiQuery(queryString);
    if (query.include.length) validateIncludes(this.services.ctx.registry, rt, query.include);
    return query;
  }

  /**
   * One page of a bundle's records, or of several bundles' of one entity type in one order (the
   * filter and sort then name base fields), with the records its relationships name.
   */
  async list(
    types: ResourceType | readonly ResourceType[],
    query: JsonApiQuery,
    principal: Principal,
  ): Promise<ListResult> {
    const rts = Array.isArray(types) ? (types as readonly ResourceType[]) : [types as ResourceType];
    if (!rts.length) return { resources: [], included: new Map(), next: null };
    const rt = rts[0]!;
    assertMayOnType(principal, rt.entityType, 'view', `${rt.type} resources`);
    const result = await fetchPageAcrossBundles(
      this.knex,
      this.compiler,
      rts,
      query.filter,
      query.sort,
      query.page,
      principal,
    );
    const records = await this.services.loader.load(
      this.knex,
      rt.entityType.entityType,
      result.ids,
      fieldsetsToRead(query.fields, query.include),
      undefined,
      rts.map((t) => t.bundle.bundle),
    );
    const doc = (await this.services.documents.document(this.knex, records, principal, query, {})) as {
      data: Resource[];
      included?: Resource[];
    };
    return {
      resources: doc.data,
      included: indexed(doc.included),
      next: result.hasMore
        ? { offset: query.page.offset + query.page.limit, ...(result.nextCursor ? { cursor: result.nextCursor } : {}) }
        : null,
    };
  }

  /** How many records of a bundle (or of several of one entity type) the filter matches and the caller may see, up to COUNT_CAP + 1. */
  async count(
    types: ResourceType | readonly ResourceType[],
    query: JsonApiQuery,
    principal: Principal,
  ): Promise<number> {
    const rts = Array.isArray(types) ? (types as readonly ResourceType[]) : [types as ResourceType];
    if (!rts.length) return 0;
    const rt = rts[0]!;
    const qb = this.knex(`${rt.entityType.table} as e`);
    if (rts.length === 1) qb.where('e.bundle', rt.bundle.bundle);
    else
      qb.whereIn(
        'e.bundle',
        rts.map((t) => t.bundle.bundle),
      );
    const guard = listCondition(principal, rt.entityType, 'e');
    if (guard) guard(qb);
    // The filter names base fields when there are several bundles: the first's resolve them as all would.
    const paths = this.compiler.applyFilter(qb, rt, query.filter, principal);
    qb.select('e.id').limit(COUNT_CAP + 1);
    const values = new Map<string, string | number | boolean>([['at', Math.floor(Date.now() / 1000)]]);
    this.compiler.filterValues(paths, query.filter, values);
    const { sql, bindings } = qb.toSQL();
    const bound = bindings.map((b) => {
      const name = slotName(b);
      return name === null ? b : values.get(name)!;
    });
    const [row] = await selectRows(this.knex, `select count(*) as n from (${sql}) as counted`, bound);
    return Number(row?.n ?? 0);
  }

  /**
   * One record the caller may see (404 otherwise, as the API), with the records its relationships
   * name, and its version; `record` is the record as loaded (for the per-record access checks), so
   * a page needs no second load.
   */
  async record(
    rt: ResourceType,
    uuid: string,
    principal: Principal,
    include: readonly string[],
    labelsOnly = false,
  ): Promise<{ resource: Resource; included: Map<string, Resource>; version: number | null; record: EntityRecord }> {
    assertMayOnType(principal, rt.entityType, 'view', 'this resource');
    const params = new URLSearchParams();
    if (include.length) params.set('include', include.join(','));
    if (labelsOnly)
      for (const [type, fields] of this.labelFieldsets(rt, include)) params.set(`fields[${type}]`, fields);
    const query = this.query(rt, params.toString());
    const record = await this.services.commands.view(principal, rt, uuid, { withVersion: true });
    const doc = (await this.services.documents.document(this.knex, record, principal, query, {})) as {
      data: Resource;
      included?: Resource[];
    };
    return { resource: doc.data, included: indexed(doc.included), version: record.version ?? null, record };
  }

  /**
   * Sparse fieldsets naming only the label of each type the included relationships reach: a page
   * that shows a referenced record by its name need not have its whole resource written (an
   * asset's computed location and geometry, its every field). Files stay whole (a page shows
   * their name, size and image), as does the record's own type (its fields are the page).
   */
  private labelFieldsets(rt: ResourceType, include: readonly string[]): Map<string, string> {
    const registry = this.services.ctx.registry;
    const out = new Map<string, string>();
    for (const name of include) {
      const field = rt.fieldsByName.get(name);
      if (!field || field.kind !== 'relationship' || !field.target) continue;
      for (const target of registry.targetsOf(field)) {
        const label = target.entityType.labelField;
        if (target.type === rt.type || target.entityType.entityType === 'file' || !label) continue;
        out.set(target.type, label);
      }
    }
    return out;
  }
}

function indexed(list: Resource[] | undefined): Map<string, Resource> {
  return new Map((list ?? []).map((r) => [`${r.type}:${r.id}`, r]));
}
