/** Loads records with their computed fields, limited to a sparse fieldset when one is asked for. */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import { RecordStore, type Db, type EntityRecord } from '../storage/records.ts';
import type { RevisionRow } from '../storage/revisions.ts';
import { ComputedFields } from './computed.ts';
import type { Placements } from './placements.ts';
import { COMPUTED_NEEDS } from '../model/computed-needs.ts';

export class RecordLoader {
  readonly store: RecordStore;
  private readonly computed: ComputedFields;

  /** `shared`: the farm's store and placements (context.ts buildFarmServices), so that the statements they keep serve every part. */
  constructor(
    readonly registry: ModelRegistry,
    baseUrl: string,
    shared: { store?: RecordStore; placements?: Placements } = {},
  ) {
    this.store = shared.store ?? new RecordStore(registry);
    this.computed = new ComputedFields(this.store, baseUrl, shared.placements);
  }

  /**
   * Load records by internal id with computed fields. `fieldsets` maps resource type → field
   * names (sparse fieldsets); a type not in it gets every field. `bundles`: the bundles the records
   * are known to be of, when the caller knows (RecordStore.load reads only their columns).
   */
  async load(
    db: Db,
    entityType: string,
    ids: number[],
    fieldsets: Map<string, Set<string>> | null,
    at?: number,
    bundles?: readonly string[],
  ): Promise<EntityRecord[]> {
    const records = await this.store.load(db, entityType, ids, (rt) => this.select(rt, fieldsets), bundles);
    await this.fillComputed(db, records, fieldsets, at);
    return records;
  }

  /** The record of `bundle` with this UUID with computed fields, or null (RecordStore.loadByUuid). */
  async loadByUuid(
    db: Db,
    entityType: string,
    uuid: string,
    bundle: string,
    fieldsets: Map<string, Set<string>> | null,
    options: { withVersion?: boolean } = {},
  ): Promise<EntityRecord | null> {
    const record = await this.store.loadByUuid(
      db,
      entityType,
      uuid,
      bundle,
      (rt) => this.select(rt, fieldsets),
      options,
    );
    if (record) await this.fillComputed(db, [record], fieldsets);
    return record;
  }

  /**
   * A record as one of its revisions left it (storage/revisions.ts asRecord), references resolved
   * and computed fields computed as of now: Tilth keeps no history of computed values.
   */
  async loadRevision(
    db: Db,
    current: EntityRecord,
    revision: RevisionRow,
    fieldsets: Map<string, Set<string>> | null,
  ): Promise<EntityRecord> {
    return (await this.loadRevisions(db, current, [revision], fieldsets))[0]!;
  }

  /** Several revisions of one record at once: one query per referenced type, not per revision. */
  async loadRevisions(
    db: Db,
    current: EntityRecord,
    revisions: RevisionRow[],
    fieldsets: Map<string, Set<string>> | null,
  ): Promise<EntityRecord[]> {
    const fields = this.select(current.rt, fieldsets);
    const records = revisions.map((revision) => this.store.revisions.asRecord(current, revision, fields));
    await this.store.resolveReferences(db, records);
    await this.fillComputed(db, records, fieldsets);
    return records;
  }

  /**
   * The fields to read of each resource type, by fieldset: the same array for the same set, so
   * that what RecordStore works out per field list (the columns to read) is worked out once for
   * the fieldsets that never change (LogGeometry's), and once per request for a client's.
   */
  private readonly selected = new WeakMap<Set<string>, Map<ResourceType, FieldDescriptor[]>>();

  /** The fields to read of a resource type: all, or a sparse fieldset and what its computed fields need. */
  private select(rt: ResourceType, fieldsets: Map<string, Set<string>> | null): FieldDescriptor[] {
    const set = fieldsets?.get(rt.type);
    if (!set) return rt.bundle.fields;
    let byType = this.selected.get(set);
    if (!byType) this.selected.set(set, (byType = new Map()));
    let fields = byType.get(rt);
    if (fields) return fields;
    const names = new Set(set);
    for (const f of rt.bundle.fields)
      if (f.computed && names.has(f.name)) for (const n of COMPUTED_NEEDS[f.computed].own) names.add(n);
    names.add('status');
    fields = rt.bundle.fields.filter((f) => names.has(f.name));
    byType.set(rt, fields);
    return fields;
  }

  private async fillComputed(
    db: Db,
    records: EntityRecord[],
    fieldsets: Map<string, Set<string>> | null,
    at?: number,
  ): Promise<void> {
    await this.computed.fill(
      db,
      records,
      (record, field) => {
        const set = fieldsets?.get(record.rt.type);
        return !set || set.has(field.name);
      },
      at,
    );
  }
}
