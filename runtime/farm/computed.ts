/**
 * Computed fields, filled in for a whole page of records at once (a fixed number of queries,
 * never one per record). This file dispatches by the field's `computed` kind and fills the simple
 * ones (constants, display names, file URIs, users' roles); each farm rule has its own file:
 * location and geometry (farm/location.ts over farm/placements.ts), groups (farm/groups.ts) and
 * inventory (farm/inventory.ts).
 */
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry } from '../model/registry.ts';
import { fillInventory } from './inventory.ts';
import { fillLocation } from './location.ts';
import { fillGroups } from './groups.ts';
import { Placements } from './placements.ts';
import { logValuesReader, type LogValuesReader } from './log-values.ts';
import type { Db, EntityRecord, ItemValue, RecordStore, Reference } from '../storage/records.ts';

export class ComputedFields {
  private readonly placements: Placements;
  /** The geometry of movement logs, which a movable asset's `geometry` is. */
  private readonly geometryOfLogs: LogValuesReader;

  /** The base URL's path ('' at the root): file URLs are root-relative, as Drupal's ComputedFileUrl gives them. */
  private readonly basePath: string;

  private readonly registry: ModelRegistry;

  /** `store` (and `placements`, when given): the caller's, so that the statements they keep serve both. */
  constructor(store: RecordStore, baseUrl: string, placements?: Placements) {
    this.registry = store.registry;
    this.placements = placements ?? new Placements(this.registry);
    this.geometryOfLogs = logValuesReader(store, ['geometry']);
    this.basePath = baseUrl ? new URL(baseUrl).pathname.replace(/\/+$/, '') : '';
  }

  /** Fill every computed field in `wanted` (or all) on the records. */
  async fill(
    db: Db,
    records: EntityRecord[],
    wanted: (record: EntityRecord, field: FieldDescriptor) => boolean,
    now = Math.floor(Date.now() / 1000),
  ): Promise<void> {
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
            // Shown as Drupal shows a private file: the stream URI, and where to download it,
            // root-relative as farmOS gives it (ComputedFileUrl), not absolute.
            const path = record.values.get('path') as string | null | undefined;
            record.values.set(
              field.name,
              path
                ? ({
                    value: `private://${path}`,
                    url: `${this.basePath}/system/files/${path.split('/').map(encodeURIComponent).join('/')}`,
                  } as ItemValue)
                : null,
            );
            break;
          }
          default:
            need.set(field.computed, [...(need.get(field.computed) ?? []), record]);
        }
      }
    }
    if (need.get('roles')?.length) await this.fillRoles(db, need.get('roles')!);
    const assets = [...new Set([...(need.get('location') ?? []), ...(need.get('geometry') ?? [])])];
    if (assets.length)
      await fillLocation(db, this.placements, this.geometryOfLogs, assets, now, {
        location: need.has('location'),
        geometry: need.has('geometry'),
      });
    if (need.get('group')?.length) await fillGroups(db, this.placements, need.get('group')!, now);
    if (need.get('inventory')?.length) await fillInventory(db, this.registry, need.get('inventory')!, now);
  }

  /** A user's roles, as references to user_role config entities named by the role. */
  private async fillRoles(db: Db, users: EntityRecord[]): Promise<void> {
    const rows = (await db('user_role')
      .whereIn(
        'user_id',
        users.map((u) => u.id),
      )
      .orderBy('role')
      .select('user_id', 'role')) as Array<{ user_id: number; role: string }>;
    for (const user of users) {
      user.values.set(
        'roles',
        rows
          .filter((r) => Number(r.user_id) === user.id)
          .map((r) => ({ targetId: 0, meta: { name: r.role } }) as Reference),
      );
    }
  }
}
