/**
 * Rules farmOS checks before a record is saved, each refused with a 422 naming the field
 * (farmos-behaviour.md §1.5, §1.7, §1.8; farmOS's constraint validators):
 * - a movement log may not locate an asset within itself, directly or through the current
 *   locations of its locations (CircularAssetLocation);
 * - a group assignment log may not make a group a member of itself, directly or through its
 *   members (CircularGroupMembership);
 * Parent loops are farm/parents.ts's, one birth log per child farm/births.ts's; ID tag types are
 * checked with the field's allowed values when input is read (jsonapi/coerce.ts).
 *
 * Cycles are found by walking up from the new targets (location of the location…, group of the
 * group…, parent of the parent…), one level per step with indexed queries, rather than by
 * listing everything located in or belonging to an asset; the answer is the same.
 */
import type { ModelRegistry, ResourceType } from '../model/registry.ts';
import {
  RecordStore,
  knownBundles,
  type Db,
  type EntityRecord,
  type ItemValue,
  type Reference,
} from '../storage/records.ts';
import { ValidationError, type Violation } from '../errors.ts';
import { ComputedFields } from './computed.ts';
import type { Placements } from './placements.ts';

type Values = Map<string, ItemValue | ItemValue[]>;

const refs = (v: ItemValue | ItemValue[] | undefined): Reference[] =>
  ((Array.isArray(v) ? v : v ? [v] : []) as Reference[]).filter(Boolean);

export class FarmValidation {
  private readonly store: RecordStore;
  private readonly computed: ComputedFields;

  /** `shared`: the farm's store and placements (context.ts buildFarmServices), so that the statements they keep serve every part. */
  constructor(registry: ModelRegistry, shared: { store?: RecordStore; placements?: Placements } = {}) {
    this.store = shared.store ?? new RecordStore(registry);
    // Only location and group are computed here; they need no base URL.
    this.computed = new ComputedFields(this.store, '', shared.placements);
  }

  /** Throw a ValidationError listing every rule the record as it would be saved breaks. */
  async check(db: Db, rt: ResourceType, values: Values, current: EntityRecord | null): Promise<void> {
    const get = (name: string) => (values.has(name) ? values.get(name) : current?.values.get(name));
    const violations: Violation[] = [];
    const et = rt.entityType.entityType;
    if (et === 'log') {
      const timestamp = Number(get('timestamp') ?? Math.floor(Date.now() / 1000));
      if (get('is_movement') === true)
        violations.push(
          ...(await this.circular(db, rt, get, 'location', timestamp, null, 'cannot be located within itself.')),
        );
      if (get('is_group_assignment') === true) {
        // Only groups can hold members: the assets that the log's `group` field may point at.
        const groupBundles = rt.fieldsByName.get('group')?.target?.bundles ?? null;
        violations.push(
          ...(await this.circular(db, rt, get, 'group', timestamp, groupBundles, 'cannot be a member of itself.')),
        );
      }
    }
    if (violations.length) throw new ValidationError(violations);
  }

  /** Labels and bundles of some assets. */
  private async assets(db: Db, assets: Reference[]): Promise<Map<number, EntityRecord>> {
    const label = this.store.entityType('asset').labelField;
    const records = await this.store.load(
      db,
      'asset',
      assets.map((r) => r.targetId),
      (rt) => [rt.fieldsByName.get(label)!],
      knownBundles(assets),
    );
    return new Map(records.map((r) => [r.id, r]));
  }

  /**
   * Every asset the given ones sit in, at `timestamp`, following the computed `field` (location
   * or group) upward until nothing new turns up.
   */
  private async above(
    db: Db,
    start: Reference[],
    field: 'location' | 'group',
    timestamp: number,
  ): Promise<Set<number>> {
    const seen = new Set<number>();
    let frontier = [...new Map(start.map((r) => [r.targetId, r])).values()];
    while (frontier.length) {
      const records = await this.store.load(
        db,
        'asset',
        frontier.map((r) => r.targetId),
        (rt) => rt.bundle.fields.filter((f) => f.name === 'is_fixed' || f.name === field),
        knownBundles(frontier),
      );
      await this.computed.fill(db, records, (_r, f) => f.name === field, timestamp);
      const next: Reference[] = [];
      for (const r of records) {
        for (const ref of refs(r.values.get(field))) {
          if (!seen.has(ref.targetId)) {
            seen.add(ref.targetId);
            next.push(ref);
          }
        }
      }
      frontier = next;
    }
    return seen;
  }

  /**
   * The log's assets may not be among its targets (`location` or `group`), nor anywhere above
   * them at the log's time. `bundles` limits which assets are checked (groups, for membership).
   */
  private async circular(
    db: Db,
    rt: ResourceType,
    get: (n: string) => ItemValue | ItemValue[] | undefined,
    field: 'location' | 'group',
    timestamp: number,
    bundles: string[] | null,
    message: string,
  ): Promise<Violation[]> {
    const assetField = rt.fieldsByName.get('asset');
    const targetRefs = refs(get(field));
    const targets = targetRefs.map((r) => r.targetId);
    const moved = refs(get('asset'));
    if (!assetField || !targets.length || !moved.length) return [];
    const above = await this.above(db, targetRefs, field, timestamp);
    const assets = await this.assets(db, moved);
    const violations: Violation[] = [];
    moved.forEach((r, delta) => {
      const asset = assets.get(r.targetId);
      if (!asset || (bundles && !bundles.includes(asset.bundle))) return;
      if (targets.includes(r.targetId) || above.has(r.targetId)) {
        violations.push({ field: assetField, item: delta, detail: `asset: ${labelOf(asset)} ${message}` });
      }
    });
    return violations;
  }
}

function labelOf(record: EntityRecord): string {
  const label = record.values.get(record.rt.entityType.labelField);
  return typeof label === 'string' && label ? label : `${record.rt.bundle.label} ${record.id}`;
}
