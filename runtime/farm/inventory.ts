/**
 * An asset's current inventory (farmos-behaviour.md §1.8, farmOS's AssetInventory): one inventory
 * per (measure, units) pair found on any quantity whose `inventory_asset` is the asset, starting
 * at 0; the adjustments (an `inventory_adjustment` set) on done logs up to now are applied in log
 * order (timestamp, then id) with exact fraction arithmetic: a reset takes the quantity's value
 * as written, sums are reduced (the fraction module's add/subtract). Values are rendered as farmOS
 * renders them (farm/decimal.ts). Two queries for a whole page of assets, plus one for unit names;
 * table and column names come from the descriptors.
 */
import type { ModelRegistry } from '../model/registry.ts';
import { columnOf, fieldOf, sideTableOf } from '../model/storage-of.ts';
import { lockRows, type Db, type EntityRecord, type ItemValue, type Reference } from '../storage/records.ts';
import { noteChangedIds } from '../storage/unit-of-work.ts';
import { SqlMemo, quoteName, selectRows } from '../storage/sql.ts';
import { dialectOf } from '../storage/dialect.ts';
import { recordDueChanges, type DueChange } from '../storage/due-changes.ts';
import { farmDecimal } from './decimal.ts';

type Values = ReadonlyMap<string, ItemValue | ItemValue[]>;

const refs = (values: Values | null, name: string): number[] => {
  const v = values?.get(name);
  return ((Array.isArray(v) ? v : v ? [v] : []) as Reference[]).filter(Boolean).map((r) => r.targetId);
};
const sameIds = (a: number[], b: number[]) => a.length === b.length && a.every((id, i) => id === b[i]);
const same = (before: Values, after: Values, name: string) =>
  JSON.stringify(before.get(name) ?? null) === JSON.stringify(after.get(name) ?? null);

/** A quantity's fields that its inventory asset's inventory shows (a pair, or an adjustment). */
const QUANTITY_FIELDS = ['inventory_asset', 'inventory_adjustment', 'measure', 'value', 'units', 'unit'];

/** What a save does to inventories: the assets whose inventory it changes now, and at moments to come. */
export interface InventoryPlan {
  now: number[];
  due: DueChange[];
}

const NOTHING: InventoryPlan = { now: [], due: [] };

/** Every asset a plan writes (locked with the assets a save moves, in one ascending pass: Placements.rebuild). */
export function plannedAssets(plan: InventoryPlan): number[] {
  return [...plan.now, ...plan.due.map((d) => d.id)];
}

/**
 * The assets whose computed inventory a save changes, so that they get a change-feed row (a new
 * version) in the save's transaction, as placements gives one to the assets a movement moves:
 * otherwise an offline client would keep the old inventory, and a GET with the old ETag would be
 * a 304. Saves that leave what an inventory reads as it was (a log sent back unchanged, a
 * pending log's notes) list nothing. An adjustment dated in the future counts from its time: that
 * moment is recorded (storage/due-changes.ts), and the asset gets its new version then.
 */
export class InventoryChanges {
  private readonly sql = new SqlMemo(16);
  private readonly layout: {
    quantity: string;
    asset: string;
    inventoryAsset: string;
    kind: string;
    units: string[];
    log: string;
    logBundles: string[];
    logQuantity: string;
    status: string;
    timestamp: string;
  } | null;

  constructor(registry: ModelRegistry) {
    const quantity = registry.model.entityTypes.quantity?.table;
    const asset = registry.model.entityTypes.asset?.table;
    const log = registry.model.entityTypes.log?.table;
    const inventoryAsset = columnOf(fieldOf(registry, 'quantity', 'inventory_asset'), 'target_id');
    const kind = columnOf(fieldOf(registry, 'quantity', 'inventory_adjustment'));
    const units = registry
      .bundlesOf('quantity')
      .flatMap((rt) => ['units', 'unit'].map((name) => columnOf(rt.fieldsByName.get(name), 'target_id')));
    const logQuantity = sideTableOf(fieldOf(registry, 'log', 'quantity'));
    const status = columnOf(fieldOf(registry, 'log', 'status'));
    const timestamp = columnOf(fieldOf(registry, 'log', 'timestamp'));
    this.layout =
      quantity && asset && log && inventoryAsset && kind && logQuantity && status && timestamp
        ? {
            quantity,
            asset,
            inventoryAsset,
            kind,
            units: [...new Set(units.filter((c): c is string => Boolean(c)))],
            log,
            logBundles: registry.bundlesOf('log').map((rt) => rt.bundle.bundle),
            logQuantity,
            status,
            timestamp,
          }
        : null;
  }

  /**
   * What saving record `id` of `entityType` does to inventories, worked out before the save's
   * other writes lock anything: `before` null for a creation, `after` null for a deletion (asked
   * before the rows go). `dependents`: the quantities deleted with a log.
   */
  async plan(
    db: Db,
    entityType: string,
    id: number,
    before: Values | null,
    after: Values | null,
    dependents: number[] = [],
  ): Promise<InventoryPlan> {
    if (!this.layout) return NOTHING;
    switch (entityType) {
      case 'log':
        return this.ofLog(db, before, after, dependents);
      case 'quantity':
        return this.ofQuantity(db, id, before, after);
      case 'taxonomy_term':
        return { now: before ? await this.ofTerm(db, id, before, after) : [], due: [] };
      default:
        return NOTHING;
    }
  }

  /** Carry a plan out: the assets' rows locked first (as every save of an asset locks its row before its feed row: the global lock order, storage/locks.ts), then their feed rows (noted for the save's unit of work: storage/unit-of-work.ts) and moments. */
  async apply(db: Db, plan: InventoryPlan): Promise<void> {
    const assets = plannedAssets(plan);
    if (!this.layout || !assets.length) return;
    await lockRows(db, this.layout.asset, assets);
    await noteChangedIds(db, 'asset', this.layout.asset, plan.now);
    await recordDueChanges(db, 'asset', plan.due);
  }

  /**
   * Every future-dated adjustment's moment, recorded once more (at start and after an import,
   * whose writes do not go through plan): done logs after now, by the log table's
   * (bundle, timestamp) index, with their adjusting quantities.
   */
  async recordAllDue(db: Db): Promise<void> {
    if (!this.layout) return;
    const l = this.layout;
    const rows = (await db(`${l.log} as l`)
      .join(`${l.logQuantity} as lq`, 'lq.entity_id', 'l.id')
      .join(`${l.quantity} as q`, 'q.id', 'lq.target_id')
      .whereIn('l.bundle', l.logBundles)
      .where(`l.${l.timestamp}`, '>', Math.floor(Date.now() / 1000))
      .where(`l.${l.status}`, 'done')
      .whereNotNull(`q.${l.inventoryAsset}`)
      .whereNotNull(`q.${l.kind}`)
      .distinct(`q.${l.inventoryAsset} as asset`, `l.${l.timestamp} as at`)) as Array<{ asset: number; at: number }>;
    await recordDueChanges(
      db,
      'asset',
      rows.map((r) => ({ id: Number(r.asset), at: Number(r.at) })),
    );
  }

  /**
   * A log: the assets its quantities adjust, when whether they count changes (a done log's
   * quantities, up to its timestamp), and those whose pairs go with the quantities deleted with
   * it; and, for a done log dated ahead, the moment they count from.
   */
  private async ofLog(
    db: Db,
    before: Values | null,
    after: Values | null,
    dependents: number[],
  ): Promise<InventoryPlan> {
    const now = await this.assetsOf(db, dependents, { adjusting: false });
    const done = (v: Values | null) => v?.get('status') === 'done';
    const [was, is] = [refs(before, 'quantity'), refs(after, 'quantity')];
    const at = Number(after?.get('timestamp'));
    const due =
      done(after) && at > Date.now() / 1000
        ? (await this.assetsOf(db, is, { adjusting: true })).map((id) => ({ id, at }))
        : [];
    if (!done(before) && !done(after)) return { now, due };
    if (before && after && done(before) === done(after) && same(before, after, 'timestamp') && sameIds(was, is))
      return { now, due };
    return { now: [...new Set([...now, ...(await this.assetsOf(db, [...was, ...is], { adjusting: true }))])], due };
  }

  /**
   * A quantity: the inventory assets it was and is on, when what they show of it changes; and for
   * one already on done logs dated ahead, the moments its new asset changes at.
   */
  private async ofQuantity(db: Db, id: number, before: Values | null, after: Values | null): Promise<InventoryPlan> {
    if (before && after && QUANTITY_FIELDS.every((name) => same(before, after, name))) return NOTHING;
    const now = [...new Set([...refs(before, 'inventory_asset'), ...refs(after, 'inventory_asset')])];
    const targets = refs(after, 'inventory_asset');
    if (!before || !after || !targets.length || !after.get('inventory_adjustment')) return { now, due: [] };
    const l = this.layout!;
    const moments = (await db(`${l.logQuantity} as lq`)
      .join(`${l.log} as l`, 'l.id', 'lq.entity_id')
      .where('lq.target_id', id)
      .where(`l.${l.status}`, 'done')
      .where(`l.${l.timestamp}`, '>', Math.floor(Date.now() / 1000))
      .distinct(`l.${l.timestamp} as at`)) as Array<{ at: number }>;
    return { now, due: moments.flatMap((m) => targets.map((asset) => ({ id: asset, at: Number(m.at) }))) };
  }

  /**
   * A taxonomy term renamed (`after` the saved values) or deleted (`after` null): the inventory
   * assets of the quantities it is the unit of, as an inventory shows the unit's name.
   */
  private async ofTerm(db: Db, termId: number, before: Values, after: Values | null): Promise<number[]> {
    const l = this.layout!;
    if (!l.units.length || (after && same(before, after, 'name'))) return [];
    const rows = (await db(l.quantity)
      .where((w) => {
        for (const column of l.units) w.orWhere(column, termId);
      })
      .whereNotNull(l.inventoryAsset)
      .distinct(`${l.inventoryAsset} as asset`)) as Array<{ asset: number }>;
    return rows.map((r) => Number(r.asset));
  }

  /**
   * The inventory assets of these quantities; with `adjusting`, of those that adjust one only.
   * One statement whatever the count (the ids bound as one parameter), its text built once per
   * shape: every save of a log with quantities asks this, and Knex's query builder compiling it
   * afresh was a twentieth of a POST's time (issue 41 Part F).
   */
  private async assetsOf(db: Db, quantities: number[], { adjusting }: { adjusting: boolean }): Promise<number[]> {
    const ids = [...new Set(quantities)];
    if (!ids.length) return [];
    const l = this.layout!;
    const dialect = dialectOf(db);
    const single = ids.length === 1;
    const sql = this.sql.get(`assets:${dialect.name}:${single}:${adjusting}`, () => {
      const asset = quoteName(l.inventoryAsset);
      return `SELECT DISTINCT ${asset} AS asset FROM ${quoteName(l.quantity)} WHERE ${dialect.inIdList('id', { single })} AND ${asset} IS NOT NULL${adjusting ? ` AND ${quoteName(l.kind)} IS NOT NULL` : ''}`;
    });
    return (await selectRows<{ asset: number }>(db, sql, [dialect.idListParameter(ids)])).map((r) => Number(r.asset));
  }
}

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

/** The tables and columns an inventory is read from, or null when the model lacks one of them. */
function inventoryLayout(registry: ModelRegistry) {
  const quantityEt = registry.model.entityTypes.quantity;
  const logEt = registry.model.entityTypes.log;
  const logQuantity = sideTableOf(fieldOf(registry, 'log', 'quantity'));
  const quantityField = (name: string, property = 'value') => columnOf(fieldOf(registry, 'quantity', name), property);
  const q = {
    asset: quantityField('inventory_asset', 'target_id'),
    kind: quantityField('inventory_adjustment'),
    measure: quantityField('measure'),
    numerator: quantityField('value', 'numerator'),
    denominator: quantityField('value', 'denominator'),
  };
  const l = {
    status: columnOf(fieldOf(registry, 'log', 'status')),
    timestamp: columnOf(fieldOf(registry, 'log', 'timestamp')),
  };
  if (
    !quantityEt ||
    !logEt ||
    !logQuantity ||
    !q.asset ||
    !q.kind ||
    !q.measure ||
    !q.numerator ||
    !q.denominator ||
    !l.status ||
    !l.timestamp
  )
    return null;
  return {
    quantityEt,
    logEt,
    logQuantity,
    q: q as Record<keyof typeof q, string>,
    l: l as Record<keyof typeof l, string>,
  };
}

/**
 * The adjustments of these assets' inventories on done logs up to `now`, in the order they apply
 * (log timestamp, log id, quantity id): one statement. Quantity bundles name their unit `units`
 * (farmOS) or `unit` (the spec, an alias); both are read.
 */
async function readAdjustments(
  db: Db,
  registry: ModelRegistry,
  layout: NonNullable<ReturnType<typeof inventoryLayout>>,
  assetIds: number[],
  now: number,
): Promise<{ rows: Array<Record<string, unknown>>; unit: ReturnType<Db['raw']> }> {
  const { quantityEt, logEt, logQuantity, q, l } = layout;
  const unitColumns = [
    ...new Set(
      registry
        .bundlesOf('quantity')
        .map((rt) => columnOf(rt.fieldsByName.get('units'), 'target_id'))
        .filter((c): c is string => Boolean(c)),
    ),
  ];
  const unit = unitColumns.length
    ? db.raw(`COALESCE(${unitColumns.map((c) => `q.${c}`).join(', ')}) as unit`)
    : db.raw('NULL as unit');
  const rows = (await db(`${quantityEt.table} as q`)
    .join(`${logQuantity} as lq`, 'lq.target_id', 'q.id')
    .join(`${logEt.table} as l`, 'l.id', 'lq.entity_id')
    .whereIn(`q.${q.asset}`, assetIds)
    .whereNotNull(`q.${q.kind}`)
    .where(`l.${l.status}`, 'done')
    .where(`l.${l.timestamp}`, '<=', now)
    .orderBy([{ column: `l.${l.timestamp}` }, { column: 'l.id' }, { column: 'q.id' }])
    .select(
      `q.${q.asset} as asset`,
      `q.${q.kind} as kind`,
      `q.${q.measure} as measure`,
      `q.${q.numerator} as n`,
      `q.${q.denominator} as d`,
      `l.${l.timestamp} as at`,
      unit,
    )) as Array<Record<string, unknown>>;
  return { rows, unit };
}

export async function fillInventory(
  db: Db,
  registry: ModelRegistry,
  assets: EntityRecord[],
  now: number,
): Promise<void> {
  for (const a of assets) a.values.set('inventory', []);
  const layout = inventoryLayout(registry);
  if (!layout || !assets.length) return;
  const { quantityEt, q } = layout;
  const { rows, unit } = await readAdjustments(
    db,
    registry,
    layout,
    assets.map((a) => a.id),
    now,
  );
  const adjustments: Adjustment[] = rows.map((r) => ({
    asset: Number(r.asset),
    kind: r.kind as Adjustment['kind'],
    measure: (r.measure as string | null) || null,
    unit: r.unit === null || r.unit === undefined ? null : Number(r.unit),
    numerator: BigInt(String(r.n ?? 0)),
    denominator: BigInt(String(r.d ?? 1)) || 1n,
  }));
  // Every pair on the asset's quantities is listed, even before any of its adjustments counts
  // (farmOS's getMeasureUnitsPairs reads the quantity table alone); in order of first appearance.
  const pairRows = (await db(`${quantityEt.table} as q`)
    .whereIn(
      `q.${q.asset}`,
      assets.map((a) => a.id),
    )
    .orderBy('q.id')
    .select(`q.${q.asset} as asset`, `q.${q.measure} as measure`, unit)) as Array<Record<string, unknown>>;
  const unitIds = [
    ...new Set(
      pairRows
        .map((r) => r.unit)
        .filter((u) => u !== null && u !== undefined)
        .map(Number),
    ),
  ];
  const termTable = registry.model.entityTypes.taxonomy_term?.table;
  const unitNames = new Map<number, string>();
  if (unitIds.length && termTable)
    for (const t of await db(termTable).whereIn('id', unitIds).select('id', 'name'))
      unitNames.set(Number(t.id), String(t.name));

  const pairKey = (measure: string | null, unit: number | null) => `${measure ?? ''}|${unit ?? ''}`;
  const byAsset = new Map<number, Map<string, { measure: string | null; unit: number | null; n: bigint; d: bigint }>>();
  for (const r of pairRows) {
    const asset = Number(r.asset);
    const measure = (r.measure as string | null) || null;
    const unitId = r.unit === null || r.unit === undefined ? null : Number(r.unit);
    let pairs = byAsset.get(asset);
    if (!pairs) byAsset.set(asset, (pairs = new Map()));
    const key = pairKey(measure, unitId);
    if (!pairs.has(key)) pairs.set(key, { measure, unit: unitId, n: 0n, d: 1n });
  }
  for (const a of adjustments) {
    const total = byAsset.get(a.asset)?.get(pairKey(a.measure, a.unit));
    if (!total) continue;
    if (a.kind === 'reset') {
      // As written: a reset to 1.50 shows "1.50".
      total.n = a.numerator;
      total.d = a.denominator;
      continue;
    }
    const sign = a.kind === 'decrement' ? -1n : 1n;
    total.n = total.n * a.denominator + sign * a.numerator * total.d;
    total.d = total.d * a.denominator;
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
        value: farmDecimal(t.n, t.d),
        units: t.unit !== null ? (unitNames.get(t.unit) ?? '') : '',
      })) as unknown as ItemValue[],
    );
  }
}

/** One step of an inventory's history: what a log's adjustment made of it. */
export interface InventoryStep {
  timestamp: number;
  kind: 'increment' | 'decrement' | 'reset';
  /** The adjustment's value and the inventory after it, as farmOS renders them. */
  amount: string;
  value: string;
  /** The inventory after it, as a number (for a chart). */
  numeric: number;
}

/**
 * An asset's inventory history (issue 42 §6): per (measure, units) pair, every step its done
 * adjusting logs up to `now` made, in the order fillInventory applies them, with the same
 * arithmetic, so the last step is the inventory the asset shows. The newest `keep` steps of each
 * pair are returned (`more` when there were older ones). One statement, plus one for unit names.
 */
export async function inventoryHistory(
  db: Db,
  registry: ModelRegistry,
  assetId: number,
  now: number,
  keep: number,
): Promise<Array<{ measure: string; units: string; steps: InventoryStep[]; more: boolean }>> {
  const layout = inventoryLayout(registry);
  if (!layout) return [];
  const { rows } = await readAdjustments(db, registry, layout, [assetId], now);
  if (!rows.length) return [];
  const termTable = registry.model.entityTypes.taxonomy_term?.table;
  const unitIds = [
    ...new Set(
      rows
        .map((r) => r.unit)
        .filter((u) => u !== null && u !== undefined)
        .map(Number),
    ),
  ];
  const unitNames = new Map<number, string>();
  if (unitIds.length && termTable)
    for (const t of await db(termTable).whereIn('id', unitIds).select('id', 'name'))
      unitNames.set(Number(t.id), String(t.name));
  const pairs = new Map<string, { measure: string; units: string; n: bigint; d: bigint; steps: InventoryStep[] }>();
  for (const r of rows) {
    const measure = (r.measure as string | null) || '';
    const unit = r.unit === null || r.unit === undefined ? null : Number(r.unit);
    const key = `${measure}|${unit ?? ''}`;
    let pair = pairs.get(key);
    if (!pair)
      pairs.set(
        key,
        (pair = { measure, units: unit !== null ? (unitNames.get(unit) ?? '') : '', n: 0n, d: 1n, steps: [] }),
      );
    const kind = r.kind as InventoryStep['kind'];
    const n = BigInt(String(r.n ?? 0));
    const d = BigInt(String(r.d ?? 1)) || 1n;
    if (kind === 'reset') {
      pair.n = n;
      pair.d = d;
    } else {
      const sign = kind === 'decrement' ? -1n : 1n;
      pair.n = pair.n * d + sign * n * pair.d;
      pair.d = pair.d * d;
      const g = gcd(pair.n, pair.d);
      pair.n /= g;
      pair.d /= g;
    }
    const value = farmDecimal(pair.n, pair.d);
    pair.steps.push({ timestamp: Number(r.at), kind, amount: farmDecimal(n, d), value, numeric: Number(value) });
  }
  return [...pairs.values()].map((p) => ({
    measure: p.measure,
    units: p.units,
    steps: p.steps.slice(-keep),
    more: p.steps.length > keep,
  }));
}
