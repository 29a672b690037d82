/**
 * The records a record's page lists beside its fields (issue 38 screen 4): an asset's logs, newest
 * first and paged; what a location holds now; the records that use a term. Each is read as the
 * API reads a collection (reads.ts: the query written as the API's query string and parsed by its
 * parser, a page of ids from its compiler with the access policy's conditions, the records from
 * farm/loader.ts and rendered by its document writer), one query per bundle that can hold such a
 * record, then one load of them all: a fixed number of statements whatever the rows. A location's
 * contents come from the computed location (farm/placements.ts's intervals, through the compiler's
 * `location.id` condition), as `filter[location.id]` at /api/asset/<bundle> finds them.
 */
import type { AppContext } from '../context.ts';
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { fieldFilterable, mayOnType } from '../access/policy.ts';
import { fetchPage } from '../jsonapi/collection/page.ts';
import type { EntityRecord } from '../storage/records.ts';
import type { Resource } from './format.ts';
import type { WebReads } from './reads.ts';

/** Logs per page on an asset's page. */
export const LOGS_PAGE = 20;
/** A location's contents shown, at most. */
const CONTENTS_LIMIT = 50;
/** Records of each bundle shown as using a term, at most. */
const USES_PER_BUNDLE = 10;

/** farmOS's log fields an asset's logs are found and ordered by. */
const LOGS = { entityType: 'log', asset: 'asset', location: 'location', date: 'timestamp' } as const;
/** The asset field that makes an asset a location. */
const IS_LOCATION = 'is_location';

/** Where a page of an asset's logs starts: below this date and, at that date, this internal id. */
export interface LogCursor {
  at: number;
  id: number;
}

export function parseLogCursor(text: string | null): LogCursor | null {
  const m = /^(-?\d{1,12})\.(\d{1,12})$/.exec(text ?? '');
  return m ? { at: Number(m[1]), id: Number(m[2]) } : null;
}

/** Fields beyond a list's label, date and status, and include paths, that a page reads logs with (the timeline's). */
export interface LogShape {
  fields: readonly string[];
  include: readonly string[];
}
const NO_SHAPE: LogShape = { fields: [], include: [] };

export interface RelatedRecord {
  resource: Resource;
  rt: ResourceType;
}

/** A filter in the API's query string (Drupal's long form), with groups. */
class ApiFilter {
  private readonly params = new URLSearchParams();
  private n = 0;

  group(conjunction: 'AND' | 'OR', memberOf?: string): string {
    const key = `g${this.n++}`;
    this.params.set(`filter[${key}][group][conjunction]`, conjunction);
    if (memberOf) this.params.set(`filter[${key}][group][memberOf]`, memberOf);
    return key;
  }

  condition(path: string, operator: string, value: string, memberOf?: string): this {
    const key = `c${this.n++}`;
    this.params.set(`filter[${key}][condition][path]`, path);
    this.params.set(`filter[${key}][condition][operator]`, operator);
    this.params.set(`filter[${key}][condition][value]`, value);
    if (memberOf) this.params.set(`filter[${key}][condition][memberOf]`, memberOf);
    return this;
  }

  set(name: string, value: string): this {
    this.params.set(name, value);
    return this;
  }

  toString(): string {
    return this.params.toString();
  }
}

export class RelatedRecords {
  /** The narrow fieldsets the lists read, by entity type: made once, so the loader's memo of columns holds. */
  private readonly fieldsets = new Map<string, Map<string, Set<string>>>();

  constructor(
    private readonly ctx: AppContext,
    private readonly reads: WebReads,
  ) {}

  private get knex() {
    return this.reads.services.knex;
  }

  /** The bundles of an entity type the caller may read. */
  private viewable(entityType: string, principal: Principal): ResourceType[] {
    return this.ctx.registry.bundlesOf(entityType).filter((rt) => mayOnType(principal, rt.entityType, 'view'));
  }

  /** The fields a list of this entity type shows: its label, date and status (and `extra`, a timeline's). */
  private fieldsetOf(entityType: string, extra: readonly string[] = []): Map<string, Set<string>> {
    const key = [entityType, ...extra].join(',');
    let sets = this.fieldsets.get(key);
    if (!sets) {
      sets = new Map();
      const et = this.ctx.registry.model.entityTypes[entityType];
      for (const rt of this.ctx.registry.bundlesOf(entityType))
        sets.set(
          rt.type,
          new Set(
            [et?.labelField, 'timestamp', 'status', ...extra].filter((n): n is string => !!n && rt.fieldsByName.has(n)),
          ),
        );
      this.fieldsets.set(key, sets);
    }
    return sets;
  }

  /** One page of ids of a bundle for a query string, as the API's collection reads it. */
  private async ids(rt: ResourceType, queryString: string, principal: Principal) {
    const query = this.reads.query(rt, queryString);
    return fetchPage(this.knex, this.reads.compiler, rt, query.filter, query.sort, query.page, principal);
  }

  /** Records of one entity type by internal id, in that order, as the API renders them to this caller. */
  private async render(
    entityType: string,
    records: EntityRecord[],
    principal: Principal,
    shape: LogShape = NO_SHAPE,
  ): Promise<RelatedRecord[]> {
    return (await this.renderWith(entityType, records, principal, shape)).records;
  }

  /** As render, with the records their `include` paths name (those the API would include for this caller). */
  private async renderWith(
    entityType: string,
    records: EntityRecord[],
    principal: Principal,
    shape: LogShape,
  ): Promise<{ records: RelatedRecord[]; included: Map<string, Resource> }> {
    if (!records.length) return { records: [], included: new Map() };
    // Rendered with the fieldsets they were loaded with, as a sparse `fields[…]` request is.
    const fields = new URLSearchParams();
    for (const [type, names] of this.fieldsetOf(entityType, shape.fields))
      if (names.size) fields.set(`fields[${type}]`, [...names].join(','));
    const include = shape.include.filter((path) => records.some((r) => r.rt.fieldsByName.has(path.split('.')[0]!)));
    if (include.length) fields.set('include', include.join(','));
    const doc = (await this.reads.services.documents.document(
      this.knex,
      records,
      principal,
      this.reads.query(records[0]!.rt, fields.toString()),
      {},
    )) as { data: Resource[]; included?: Resource[] };
    return {
      records: doc.data.map((resource, i) => ({ resource, rt: records[i]!.rt })),
      included: new Map((doc.included ?? []).map((r) => [`${r.type}:${r.id}`, r])),
    };
  }

  /**
   * An asset's logs, newest first (date, then the newest made): those naming it in `asset` or
   * moving something to it (`location`), as farmOS's asset page lists them. One page of ids per
   * log bundle below the cursor, one load of those, the newest LOGS_PAGE of them kept.
   */
  async logsOf(
    uuid: string,
    principal: Principal,
    before: LogCursor | null,
    shape: LogShape = NO_SHAPE,
  ): Promise<{ logs: RelatedRecord[]; next: LogCursor | null; included: Map<string, Resource> }> {
    const ids: number[] = [];
    let more = false;
    for (const rt of this.viewable(LOGS.entityType, principal)) {
      const refs = [LOGS.asset, LOGS.location].filter((name) => {
        const field = rt.fieldsByName.get(name);
        return field && field.kind === 'relationship' && fieldFilterable(field, principal, rt.entityType);
      });
      if (!refs.length || !rt.fieldsByName.has(LOGS.date)) continue;
      const filter = new ApiFilter();
      const naming = filter.group('OR');
      for (const name of refs) filter.condition(`${name}.id`, '=', uuid, naming);
      if (before) {
        const below = filter.group('OR');
        filter.condition(LOGS.date, '<', String(before.at), below);
        const same = filter.group('AND', below);
        filter.condition(LOGS.date, '=', String(before.at), same);
        filter.condition(rt.entityType.internalId, '<', String(before.id), same);
      }
      // `-timestamp` breaks ties by the internal id, descending (collection/page.ts): the same order as below.
      filter.set('sort', `-${LOGS.date}`).set('page[limit]', String(LOGS_PAGE));
      const page = await this.ids(rt, filter.toString(), principal);
      ids.push(...page.ids);
      if (page.hasMore) more = true;
    }
    if (!ids.length) return { logs: [], next: null, included: new Map() };
    const records = await this.reads.services.loader.load(
      this.knex,
      LOGS.entityType,
      ids,
      this.fieldsetOf(LOGS.entityType, shape.fields),
    );
    const at = (r: EntityRecord) => Number(r.values.get(LOGS.date) ?? 0);
    records.sort((a, b) => at(b) - at(a) || b.id - a.id);
    const shown = records.slice(0, LOGS_PAGE);
    more ||= records.length > LOGS_PAGE;
    const last = shown[shown.length - 1]!;
    const rendered = await this.renderWith(LOGS.entityType, shown, principal, shape);
    return {
      logs: rendered.records,
      next: more ? { at: at(last), id: last.id } : null,
      included: rendered.included,
    };
  }

  /** Whether an asset is a location (farmOS's `is_location`). */
  isLocation(record: EntityRecord): boolean {
    const v = record.values.get(IS_LOCATION) as unknown;
    return record.rt.entityType.entityType === 'asset' && (v === true || v === 1);
  }

  /** The assets a location holds now, by name: their computed location names it. */
  async contentsOf(uuid: string, principal: Principal): Promise<{ assets: RelatedRecord[]; more: boolean }> {
    const ids: number[] = [];
    let more = false;
    for (const rt of this.viewable('asset', principal)) {
      const field = rt.fieldsByName.get(LOGS.location);
      if (!field || !fieldFilterable(field, principal, rt.entityType)) continue;
      const filter = new ApiFilter()
        .condition(`${LOGS.location}.id`, '=', uuid)
        .set('sort', rt.entityType.labelField)
        .set('page[limit]', String(CONTENTS_LIMIT));
      const page = await this.ids(rt, filter.toString(), principal);
      ids.push(...page.ids);
      if (page.hasMore) more = true;
    }
    if (!ids.length) return { assets: [], more: false };
    const records = await this.reads.services.loader.load(this.knex, 'asset', ids, this.fieldsetOf('asset'));
    const label = (r: EntityRecord) => String(r.values.get(r.rt.entityType.labelField) ?? '');
    records.sort((a, b) => label(a).localeCompare(label(b)) || a.id - b.id);
    return {
      assets: await this.render('asset', records.slice(0, CONTENTS_LIMIT), principal),
      more: more || records.length > CONTENTS_LIMIT,
    };
  }

  /**
   * The records that use a term: of every bundle with a reference field that may point at the
   * term's vocabulary, up to USES_PER_BUNDLE each (those first made first). One page of ids per
   * such bundle, one load per entity type.
   */
  async usesOf(
    term: ResourceType,
    uuid: string,
    principal: Principal,
  ): Promise<{ uses: RelatedRecord[]; more: boolean }> {
    const byType = new Map<string, number[]>();
    let more = false;
    for (const entityType of Object.keys(this.ctx.registry.model.entityTypes)) {
      for (const rt of this.viewable(entityType, principal)) {
        const fields = rt.relationships.filter(
          (f) =>
            !f.computed &&
            fieldFilterable(f, principal, rt.entityType) &&
            this.ctx.registry.targetsOf(f).some((t) => t.type === term.type),
        );
        if (!fields.length) continue;
        const filter = new ApiFilter();
        const any = filter.group('OR');
        for (const f of fields) filter.condition(`${f.name}.id`, '=', uuid, any);
        filter.set('page[limit]', String(USES_PER_BUNDLE));
        const page = await this.ids(rt, filter.toString(), principal);
        if (!byType.has(entityType)) byType.set(entityType, []);
        byType.get(entityType)!.push(...page.ids);
        if (page.hasMore) more = true;
      }
    }
    const uses: RelatedRecord[] = [];
    for (const [entityType, ids] of byType) {
      if (!ids.length) continue;
      const records = await this.reads.services.loader.load(this.knex, entityType, ids, this.fieldsetOf(entityType));
      uses.push(...(await this.render(entityType, records, principal)));
    }
    return { uses, more };
  }
}
