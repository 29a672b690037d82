/**
 * A log saved without a geometry takes the geometry of where it happened (farmos-behaviour.md §1.7):
 * its location assets, or, for a log that is not a movement, the location assets among its assets.
 * They are combined as farmOS's WktTrait::combineWkt does (values/geometry.ts): several, or a
 * multi-geometry, make one flat GEOMETRYCOLLECTION. A geometry the client set is kept;
 * an automatic one follows when the locations change. So an asset moved by a log without a
 * drawn geometry takes the geometry of the place it was moved to.
 */
import type { ResourceType } from '../model/registry.ts';
import { knownBundles, type Db, type EntityRecord, type ItemValue, type Reference } from '../storage/records.ts';
import type { RecordLoader } from './loader.ts';
import { combineWkt, parseWkt } from '../values/geometry.ts';

type Values = Map<string, ItemValue | ItemValue[]>;

const refs = (v: ItemValue | ItemValue[] | undefined): Reference[] =>
  ((Array.isArray(v) ? v : v ? [v] : []) as Reference[]).filter(Boolean);
const wktOf = (g: ItemValue | ItemValue[] | undefined): string | null =>
  ((g as { value?: string } | null | undefined)?.value ?? null) || null;

export class LogGeometry {
  /** Of the candidate assets, only what the combination reads: their geometry and whether they are locations. */
  private readonly fieldsets: Map<string, Set<string>>;

  constructor(private readonly loader: RecordLoader) {
    this.fieldsets = new Map(
      loader.registry.bundlesOf('asset').map((rt) => [rt.type, new Set(['geometry', 'is_location'])]),
    );
  }

  /**
   * The assets whose geometries a log's geometry combines (by its `location`, `asset` and
   * `is_movement`), and whether only locations among them count; their bundles when every
   * reference names its own (RecordStore.load then reads only those bundles' columns).
   */
  private candidates(values: Values): { ids: number[]; onlyLocations: boolean; bundles?: string[] } {
    const locations = refs(values.get('location'));
    const chosen = locations.length || values.get('is_movement') === true ? locations : refs(values.get('asset'));
    const bundles = knownBundles(chosen);
    return { ids: chosen.map((r) => r.targetId), onlyLocations: chosen !== locations, ...(bundles ? { bundles } : {}) };
  }

  /**
   * Combined current geometry of the candidate locations, or null. With `legacy`, also the
   * combination as Tilth wrote it before it followed combineWkt (the WKTs as stored, several in a
   * GEOMETRYCOLLECTION joined by ", "), so that a log saved then is still recognised as automatic.
   */
  private async combined(
    db: Db,
    selection: { ids: number[]; onlyLocations: boolean; bundles?: string[] },
  ): Promise<string | null>;
  private async combined(
    db: Db,
    selection: { ids: number[]; onlyLocations: boolean; bundles?: string[] },
    options: { legacy: true },
  ): Promise<{ wkt: string | null; legacy: string | null }>;
  private async combined(
    db: Db,
    { ids: candidates, onlyLocations, bundles }: { ids: number[]; onlyLocations: boolean; bundles?: string[] },
    { legacy }: { legacy?: true } = {},
  ): Promise<string | null | { wkt: string | null; legacy: string | null }> {
    if (!candidates.length) return legacy ? { wkt: null, legacy: null } : null;
    const loaded = new Map(
      (await this.loader.load(db, 'asset', candidates, this.fieldsets, undefined, bundles)).map((a) => [a.id, a]),
    );
    // In the order the log references them, as farmOS iterates the field.
    const wkts = candidates
      .map((id) => loaded.get(id))
      .filter((a): a is EntityRecord => Boolean(a) && (!onlyLocations || a!.values.get('is_location') === true))
      .map((a) => wktOf(a.values.get('geometry')))
      .filter((w): w is string => Boolean(w));
    const wkt = combineWkt(wkts) || null;
    if (!legacy) return wkt;
    return {
      wkt,
      legacy: wkts.length ? (wkts.length === 1 ? wkts[0]! : `GEOMETRYCOLLECTION (${wkts.join(', ')})`) : null,
    };
  }

  /**
   * farm_location's populateGeometryFromLocation: a new log keeps a geometry it was given; an
   * existing log keeps its geometry when the stored one was custom (not the combination of its
   * stored locations) or when this save changes it. Otherwise the geometry is the combination of
   * the locations as saved. Clients that send the whole record back (farmOS.js, Field Kit) echo
   * the stored geometry unchanged, so an echoed automatic geometry still follows new locations.
   */
  async beforeSave(db: Db, rt: ResourceType, values: Values, current: EntityRecord | null): Promise<void> {
    if (rt.entityType.entityType !== 'log' || !rt.fieldsByName.has('geometry') || !rt.fieldsByName.has('location'))
      return;
    const get = (name: string) => (values.has(name) ? values.get(name) : current?.values.get(name));
    const geometry = wktOf(get('geometry'));
    if (geometry && !current) return;
    const saved = this.candidates(
      new Map<string, ItemValue | ItemValue[]>([
        ['location', get('location') as ItemValue[]],
        ['asset', get('asset') as ItemValue[]],
        ['is_movement', get('is_movement') as ItemValue],
      ]),
    );
    let storedCombination: string | null | undefined;
    if (geometry && current) {
      const stored = wktOf(current.values.get('geometry'));
      if (stored !== geometry) return; // changed (or set) in this save
      const before = this.candidates(current.values);
      const combinations = await this.combined(db, before, { legacy: true });
      if (combinations.wkt !== stored && combinations.legacy !== stored) return; // drawn by a person
      storedCombination = combinations.wkt;
      // The same candidates as before this save (a PATCH of other fields): the same combination.
      if (before.onlyLocations !== saved.onlyLocations || before.ids.join() !== saved.ids.join())
        storedCombination = undefined;
    }
    const wkt = storedCombination !== undefined ? storedCombination : await this.combined(db, saved);
    if (wkt) values.set('geometry', parseWkt(wkt) as unknown as ItemValue);
  }
}
