/**
 * An asset's current inventory (farmos-behaviour.md §1.8): the quantities that adjust it
 * (`inventory_asset` = the asset, an `inventory_adjustment` set) on done logs up to now, one
 * inventory per (measure, units) pair. From the latest reset on, adjustments are applied in log
 * order (timestamp, then id) with exact fraction arithmetic. One query for a whole page of assets,
 * plus one for the unit names.
 */
import type { ModelRegistry } from '../model/registry.ts';
import type { Db, EntityRecord, ItemValue } from '../storage/records.ts';
import { fractionToDecimal } from '../values/fraction.ts';

interface Adjustment {
  asset: number;
  kind: 'increment' | 'decrement' | 'reset';
  measure: string | null;
  unit: number | null;
  numerator: bigint;
  denominator: bigint;
}

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  while (b) [a, b] = [b, a % b];
  return a || 1n;
}

export async function fillInventory(db: Db, registry: ModelRegistry, assets: EntityRecord[], now: number): Promise<void> {
  for (const a of assets) a.values.set('inventory', []);
  const quantityEt = registry.model.entityTypes.quantity;
  const logEt = registry.model.entityTypes.log;
  const quantityField = registry.bundlesOf('log').map((rt) => rt.fieldsByName.get('quantity')).find(Boolean);
  if (!quantityEt || !logEt || !quantityField || quantityField.storage.kind !== 'table' || !assets.length) return;
  // Quantity bundles name their unit `units` (farmOS) or `unit` (the spec); both are read.
  const unitColumns = [
    ...new Set(
      registry
        .bundlesOf('quantity')
        .map((rt) => rt.fieldsByName.get('units'))
        .filter((f) => f?.storage.kind === 'columns')
        .map((f) => (f!.storage as { columns: Record<string, string> }).columns.target_id!),
    ),
  ];
  const unit = unitColumns.length ? db.raw(`COALESCE(${unitColumns.map((c) => `q.${c}`).join(', ')}) as unit`) : db.raw('NULL as unit');
  const rows = (await db(`${quantityEt.table} as q`)
    .join(`${quantityField.storage.table} as lq`, 'lq.target_id', 'q.id')
    .join(`${logEt.table} as l`, 'l.id', 'lq.entity_id')
    .whereIn('q.inventory_asset', assets.map((a) => a.id))
    .whereNotNull('q.inventory_adjustment')
    .where('l.status', 'done')
    .where('l.timestamp', '<=', now)
    .orderBy([{ column: 'l.timestamp' }, { column: 'l.id' }, { column: 'q.id' }])
    .select('q.inventory_asset as asset', 'q.inventory_adjustment as kind', 'q.measure as measure', 'q.value__numerator as n', 'q.value__denominator as d', unit)) as Array<Record<string, unknown>>;
  const adjustments: Adjustment[] = rows.map((r) => ({
    asset: Number(r.asset),
    kind: r.kind as Adjustment['kind'],
    measure: (r.measure as string | null) ?? null,
    unit: r.unit === null || r.unit === undefined ? null : Number(r.unit),
    numerator: BigInt(Number(r.n ?? 0)),
    denominator: BigInt(Number(r.d ?? 1) || 1),
  }));
  const unitIds = [...new Set(adjustments.map((a) => a.unit).filter((u): u is number => u !== null))];
  const termTable = registry.model.entityTypes.taxonomy_term?.table;
  const unitNames = new Map<number, string>();
  if (unitIds.length && termTable) for (const t of await db(termTable).whereIn('id', unitIds).select('id', 'name')) unitNames.set(Number(t.id), String(t.name));

  const byAsset = new Map<number, Map<string, { measure: string | null; unit: number | null; n: bigint; d: bigint }>>();
  for (const a of adjustments) {
    const key = `${a.measure ?? ''}|${a.unit ?? ''}`;
    let pairs = byAsset.get(a.asset);
    if (!pairs) byAsset.set(a.asset, (pairs = new Map()));
    let total = pairs.get(key);
    if (!total) pairs.set(key, (total = { measure: a.measure, unit: a.unit, n: 0n, d: 1n }));
    if (a.kind === 'reset') {
      total.n = a.numerator;
      total.d = a.denominator;
    } else {
      const sign = a.kind === 'decrement' ? -1n : 1n;
      total.n = total.n * a.denominator + sign * a.numerator * total.d;
      total.d = total.d * a.denominator;
    }
    const g = gcd(total.n, total.d);
    total.n /= g;
    total.d /= g;
  }
  for (const asset of assets) {
    const pairs = byAsset.get(asset.id);
    if (!pairs) continue;
    asset.values.set(
      'inventory',
      [...pairs.values()].map((t) => ({
        measure: t.measure ?? '',
        value: fractionToDecimal({ numerator: Number(t.n), denominator: Number(t.d) }),
        units: t.unit !== null ? (unitNames.get(t.unit) ?? '') : '',
      })) as unknown as ItemValue[],
    );
  }
}
