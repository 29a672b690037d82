/**
 * Computed fields, filled in for a whole page of records at once (a fixed number of queries,
 * never one per record): constants, users' display names and roles, files' URIs, an asset's
 * inventory (farm/inventory.ts), and an asset's current location, geometry and groups from its
 * movement and group-assignment logs (farmos-behaviour.md §1.7–1.8): the latest done log at or
 * before now, ties broken by the higher log id; fixed assets take their intrinsic geometry and
 * no location.
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry } from '../model/registry.ts';
import { fillInventory } from './inventory.ts';
import { RecordStore, type Db, type EntityRecord, type ItemValue, type Reference } from '../storage/records.ts';

interface LatestLog {
  logId: number;
  timestamp: number;
}

export class ComputedFields {
  constructor(
    private readonly registry: ModelRegistry,
    private readonly baseUrl: string,
  ) {}

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

  /** Each asset's current groups: the groups of its latest done group-assignment log. */
  private async currentGroups(db: Db, assetIds: number[], now: number): Promise<Map<number, number[]>> {
    const latest = await this.latestLogs(db, assetIds, 'is_group_assignment', now);
    const logs = await loadLogs(db, this.registry, [...new Set([...latest.values()].map((l) => l.logId))]);
    const out = new Map<number, number[]>();
    for (const [asset, l] of latest) out.set(asset, (logs.get(l.logId)?.group ?? []).map((r) => r.targetId));
    return out;
  }

  private async fillLocation(db: Db, assets: EntityRecord[], now: number, location: boolean, geometry: boolean): Promise<void> {
    const movable = assets.filter((a) => !a.values.get('is_fixed')).map((a) => a.id);
    const own = await this.latestLogs(db, movable, 'is_movement', now);
    // Group members move with their group (farm_group's GroupAssetLocation): a group's movement
    // wins over the member's own when it has a higher log id and a timestamp at least as late,
    // compared group by group.
    const groups = await this.currentGroups(db, movable, now);
    const groupIds = [...new Set([...groups.values()].flat())];
    const groupMoves = groupIds.length ? await this.latestLogs(db, groupIds, 'is_movement', now) : new Map<number, LatestLog>();
    const chosen = new Map<number, LatestLog>();
    for (const id of movable) {
      let best = own.get(id);
      for (const g of groups.get(id) ?? []) {
        const move = groupMoves.get(g);
        if (move && (!best || (move.logId > best.logId && move.timestamp >= best.timestamp))) best = move;
      }
      if (best) chosen.set(id, best);
    }
    const logs = await loadLogs(db, this.registry, [...new Set([...chosen.values()].map((l) => l.logId))]);
    for (const asset of assets) {
      const fixed = Boolean(asset.values.get('is_fixed'));
      const l = fixed ? undefined : chosen.get(asset.id);
      const log = l ? logs.get(l.logId) : undefined;
      if (location) asset.values.set('location', fixed || !log ? [] : log.location.map((r) => ({ ...r, meta: {} })));
      if (geometry) asset.values.set('geometry', fixed ? ((asset.values.get('intrinsic_geometry') as ItemValue) ?? null) : log ? (log.geometry ?? null) : null);
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
