/**
 * The computed `location` and `geometry` of assets (farmos-behaviour.md §1.7): a movable asset's
 * come from the movement log its stored placement names at that moment (farm/placements.ts, which
 * keeps the movement and group rules); a fixed asset has no location and its own
 * `intrinsic_geometry`. Two queries for a whole page: the placements, and the logs' geometry.
 */
import type { Db, EntityRecord, ItemValue } from '../storage/records.ts';
import type { Placements } from './placements.ts';
import type { LogValuesReader } from './log-values.ts';

export async function fillLocation(
  db: Db,
  placements: Placements,
  geometryOfLogs: LogValuesReader,
  assets: EntityRecord[],
  at: number,
  wants: { location: boolean; geometry: boolean },
): Promise<void> {
  const movable = assets.filter((a) => !a.values.get('is_fixed')).map((a) => a.id);
  const placed = await placements.at(db, movable, at);
  const logs = wants.geometry
    ? await geometryOfLogs(db, [...new Set([...placed.values()].map((p) => p.logId))])
    : new Map();
  for (const asset of assets) {
    const fixed = Boolean(asset.values.get('is_fixed'));
    const placement = fixed ? undefined : placed.get(asset.id);
    if (wants.location)
      asset.values.set('location', placement ? placement.locations.map((r) => ({ ...r, meta: {} })) : []);
    if (wants.geometry) {
      const own = (asset.values.get('intrinsic_geometry') as ItemValue) ?? null;
      asset.values.set(
        'geometry',
        fixed ? own : placement ? ((logs.get(placement.logId)?.get('geometry') as ItemValue) ?? null) : null,
      );
    }
  }
}
