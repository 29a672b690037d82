/**
 * The computed `group` of assets (farm_group, farmos-behaviour.md §1.8): the groups named by the
 * asset's latest done group-assignment log at or before the moment asked, ties broken by the
 * higher log id. Two queries for a whole page. Table and column names come from the descriptors.
 */
import type { ModelRegistry } from '../model/registry.ts';
import { columnOf, fieldOf, sideTableOf } from '../model/storage-of.ts';
import type { Db, EntityRecord, Reference } from '../storage/records.ts';
import { logValues } from './log-values.ts';

export async function fillGroups(db: Db, registry: ModelRegistry, assets: EntityRecord[], at: number): Promise<void> {
  const logAsset = sideTableOf(fieldOf(registry, 'log', 'asset'));
  const flag = columnOf(fieldOf(registry, 'log', 'is_group_assignment'));
  const status = columnOf(fieldOf(registry, 'log', 'status'));
  const timestamp = columnOf(fieldOf(registry, 'log', 'timestamp'));
  const latest = new Map<number, { logId: number; timestamp: number }>();
  if (logAsset && flag && status && timestamp && assets.length) {
    const rows = (await db(`${logAsset} as la`)
      .join(`${registry.model.entityTypes.log!.table} as l`, 'l.id', 'la.entity_id')
      .whereIn('la.target_id', assets.map((a) => a.id))
      .where(`l.${flag}`, true)
      .where(`l.${status}`, 'done')
      .where(`l.${timestamp}`, '<=', at)
      .select('la.target_id as asset_id', 'l.id as log_id', `l.${timestamp} as ts`)) as Array<{ asset_id: number; log_id: number; ts: number }>;
    for (const r of rows) {
      const current = latest.get(Number(r.asset_id));
      const ts = Number(r.ts);
      const id = Number(r.log_id);
      if (!current || ts > current.timestamp || (ts === current.timestamp && id > current.logId)) latest.set(Number(r.asset_id), { logId: id, timestamp: ts });
    }
  }
  const logs = await logValues(db, registry, [...new Set([...latest.values()].map((l) => l.logId))], ['group']);
  for (const asset of assets) {
    const l = latest.get(asset.id);
    const groups = (l ? (logs.get(l.logId)?.get('group') as Reference[] | undefined) : undefined) ?? [];
    asset.values.set('group', groups.map((r) => ({ ...r, meta: {} })));
  }
}
