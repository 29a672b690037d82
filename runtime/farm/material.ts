/**
 * A material quantity takes the material type of the material asset whose inventory it adjusts,
 * as farmOS's farm_material QuantityEventSubscriber does on every quantity presave (create and
 * update): when the quantity is of the `material` bundle, its `inventory_asset` (as saved) is an
 * asset of the `material` bundle, and that asset has a material type, the quantity's
 * `material_type` becomes the asset's, whatever was sent. Otherwise what was sent is kept.
 */
import type { ResourceType } from '../model/registry.ts';
import type { Db, EntityRecord, ItemValue, RecordStore, Reference } from '../storage/records.ts';

const refsOf = (value: ItemValue | ItemValue[] | undefined): Reference[] =>
  ((Array.isArray(value) ? value : value ? [value] : []) as Reference[]).filter((r) => r && r.targetId);

/** Set `values`' material_type from the inventory asset, for a material quantity being saved over `current` (null when new). */
export async function copyMaterialType(
  db: Db,
  store: RecordStore,
  rt: ResourceType,
  values: Map<string, ItemValue | ItemValue[]>,
  current: EntityRecord | null,
): Promise<void> {
  if (rt.entityType.entityType !== 'quantity' || rt.bundle.bundle !== 'material') return;
  const field = rt.fieldsByName.get('material_type');
  if (!field || !rt.fieldsByName.has('inventory_asset')) return;
  const inventoryAsset = refsOf(
    values.has('inventory_asset') ? values.get('inventory_asset') : current?.values.get('inventory_asset'),
  )[0];
  if (!inventoryAsset) return;
  const [asset] = await store.load(db, 'asset', [inventoryAsset.targetId], (assetRt) => {
    const own = assetRt.fieldsByName.get('material_type');
    return own ? [own] : [];
  });
  if (!asset || asset.bundle !== 'material') return;
  const types = refsOf(asset.values.get('material_type'));
  if (!types.length) return;
  const copied = types.map((t) => ({ targetId: t.targetId, meta: {} }) as Reference);
  values.set('material_type', field.multiple ? copied : copied[0]!);
}
