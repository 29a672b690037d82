/**
 * Computed fields, filled in for a whole page of records at once (a fixed number of queries,
 * never one per record): constants, users' display names and roles, files' URIs, an asset's
 * inventory (farm/inventory.ts), an asset's location and geometry from its stored placements
 * (farm/placements.ts, which holds the movement rules) and its groups from its latest done
 * group-assignment log at or before now, ties broken by the higher log id (farmos-behaviour.md
 * §1.7–1.8); fixed assets take their intrinsic geometry and no location.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry } from '../model/registry.ts';
import { fillInventory } from './inventory.ts';
import { Placements } from './placements.ts';
import { RecordStore, type Db, type EntityRecord, type ItemValue, type Reference } from '../storage/records.ts';

interface LatestLog {
  logId: number;
  timestamp: number;
}

export class ComputedFields {
  private readonly placements: Placements;

  constructor(
    private readonly registry: ModelRegistry,
    private readonly baseUrl: string,
  ) {
    this.placements = new Placements(registry);
  }

  /** Fill every computed field in `wanted` (or all) on the records. */
  async fill(db: Db, records: EntityRecord[], wanted: (record: EntityRecord, field: FieldDescriptor) => boolean, now = Math.floor(Date.now() / 1000)): Promise<void> {
    const need = new Map<string, EntityRecord[]>();
    for (const record of records) {
      for (const field of record.rt.bundle.fields) {
        if (!field.computed || !wanted(record, field)) continue;
        switch (field.computed) {
          case 'constant':
            record.values.set(field.name, (field.default as ItemValue) ?? null);
            break;
          case 'display_name':
            record.values.set(field.name, (record.values.get('name') as string | undefined) ?? null);
            break;
          case 'file_uri': {
            // Shown as Drupal shows a private file: the stream URI, and where to download it.
            const path = record.values.get('path') as string | null | undefined;
            record.values.set(field.name, path ? ({ value: `private://${path}`, url: `${this.baseUrl}/system/files/${path.split('/').map(encodeURIComponent).join('/')}` } as ItemValue) : null);
            break;
          }
          default:
            need.set(field.computed, [...(need.get(field.computed) ?? []), record]);
        }
      }
    }
    if (need.get('roles')?.length) await this.fillRoles(db, need.get('roles')!);
    const assets = [...new Set([...(need.get('location') ?? []), ...(need.get('geometry') ?? [])])];
    if (assets.length) await this.fillLocation(db, assets, now, need.has('location'), need.has('geometry'));
    if (need.get('group')?.length) await this.fillGroups(db, need.get('group')!, now);
    if (need.get('inventory')?.length) await fillInventory(db, this.registry, need.get('inventory')!, now);
  }

  /** A user's roles, as references to user_role config entities named by the role. */
  private async fillRoles(db: Db, users: EntityRecord[]): Promise<void> {
    const rows = (await db('user_role').whereIn('user_id', users.map((u) => u.id)).orderBy('role').select('user_id', 'role')) as Array<{ user_id: number; role: string }>;
    for (const user of users) {
      user.values.set('roles', rows.filter((r) => Number(r.user_id) === user.id).map((r) => ({ targetId: 0, meta: { name: r.role } }) as Reference));
    }
  }

  private logField(name: string): FieldDescriptor | undefined {
    for (const rt of this.registry.bundlesOf('log')) {
      const f = rt.fieldsByName.get(name);
      if (f) return f;
    }
    return undefined;
  }

  /** The latest done log flagged by `flag` that references each asset, at or before `now`. */
  private async latestLogs(db: Db, assetIds: number[], flag: string, now: number): Promise<Map<number, LatestLog>> {
    const assetField = this.logField('asset');
    const flagField = this.logField(flag);
    const out = new Map<number, LatestLog>();
    if (!assetField || assetField.storage.kind !== 'table' || !flagField || !assetIds.length) return out;
    const log = this.registry.model.entityTypes.log!.table;
    const rows = await db(`${assetField.storage.table} as la`)
      .join(`${log} as l`, 'l.id', 'la.entity_id')
      .whereIn('la.target_id', assetIds)
      .where(`l.${flag}`, true)
      .where('l.status', 'done')
      .where('l.timestamp', '<=', now)
      .select('la.target_id as asset_id', 'l.id as log_id', 'l.timestamp as timestamp');
    for (const r of rows as Array<{ asset_id: number; log_id: number; timestamp: number }>) {
      const current = out.get(Number(r.asset_id));
      const ts = Number(r.timestamp);
      const id = Number(r.log_id);
      if (!current || ts > current.timestamp || (ts === current.timestamp && id > current.logId)) out.set(Number(r.asset_id), { logId: id, timestamp: ts });
    }
    return out;
  }

  /** Location and geometry from the stored intervals (farm/placements.ts), at `now`. */
  private async fillLocation(db: Db, assets: EntityRecord[], now: number, location: boolean, geometry: boolean): Promise<void> {
    const movable = assets.filter((a) => !a.values.get('is_fixed')).map((a) => a.id);
    const placed = await this.placements.at(db, movable, now);
    const logs = geometry ? await loadLogs(db, this.registry, [...new Set([...placed.values()].map((p) => p.logId))]) : new Map<number, { geometry: ItemValue }>();
    for (const asset of assets) {
      const fixed = Boolean(asset.values.get('is_fixed'));
      const placement = fixed ? undefined : placed.get(asset.id);
      if (location) asset.values.set('location', placement ? placement.locations.map((r) => ({ ...r, meta: {} })) : []);
      if (geometry) asset.values.set('geometry', fixed ? ((asset.values.get('intrinsic_geometry') as ItemValue) ?? null) : placement ? (logs.get(placement.logId)?.geometry ?? null) : null);
    }
  }

  private async fillGroups(db: Db, assets: EntityRecord[], now: number): Promise<void> {
    const latest = await this.latestLogs(db, assets.map((a) => a.id), 'is_group_assignment', now);
    const logs = await loadLogs(db, this.registry, [...new Set([...latest.values()].map((l) => l.logId))]);
    for (const asset of assets) {
      const l = latest.get(asset.id);
      const log = l ? logs.get(l.logId) : undefined;
      asset.values.set('group', log ? log.group.map((r) => ({ ...r, meta: {} })) : []);
    }
  }
}

/** Location, geometry and group of some logs, read directly (no access check: computed fields see all logs, as farmOS's do). */
async function loadLogs(db: Db, registry: ModelRegistry, ids: number[]): Promise<Map<number, { location: Reference[]; group: Reference[]; geometry: ItemValue }>> {
  const out = new Map<number, { location: Reference[]; group: Reference[]; geometry: ItemValue }>();
  if (!ids.length) return out;
  const store = new RecordStore(registry);
  const records = await store.load(db, 'log', ids, (rt) => rt.bundle.fields.filter((f) => ['location', 'group', 'geometry'].includes(f.name)));
  for (const r of records) {
    out.set(r.id, {
      location: (r.values.get('location') as Reference[] | undefined) ?? [],
      group: (r.values.get('group') as Reference[] | undefined) ?? [],
      geometry: (r.values.get('geometry') as ItemValue | undefined) ?? null,
    });
  }
  return out;
}
