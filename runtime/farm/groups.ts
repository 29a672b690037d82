/**
 * The computed `group` of assets (farm_group, farmos-behaviour.md §1.8): the groups named by the
 * asset's latest done group-assignment log at or before the moment asked, ties broken by the
 * higher log id. Read from the stored membership intervals (farm/placements.ts, which keeps the
 * rule): one indexed query for a whole page, however many logs the assets have.
 */
import type { Db, EntityRecord } from '../storage/records.ts';
import type { Placements } from './placements.ts';

export async function fillGroups(db: Db, placements: Placements, assets: EntityRecord[], at: number): Promise<void> {
  const groups = await placements.groupsAt(
    db,
    assets.map((a) => a.id),
    at,
  );
  for (const asset of assets) asset.values.set('group', groups.get(asset.id) ?? []);
}
