/**
 * The records holding references to others: every place a reference to an entity type is kept,
 * the records holding references to some records, and moving references from one record to
 * another.
 */
import type { ModelRegistry } from '../model/registry.ts';
import { noteChangedIds } from './unit-of-work.ts';
import { chunks, type Db, type ReferencePlace } from './record-values.ts';

export class RecordHolders {
  constructor(readonly registry: ModelRegistry) {}

  /**
   * The records that refer to these (other than themselves), by entity type: a delete of these
   * changes them too (their references go), so the change feed lists them.
   */
  async holdersOf(db: Db, entityType: string, ids: number[]): Promise<Map<string, Set<number>>> {
    const holders = new Map<string, Set<number>>();
    for (const { entityType: owner, table, column, side } of this.referencesTo(entityType)) {
      for (const part of chunks(ids)) {
        for (const h of (await db(table)
          .whereIn(column, part)
          .distinct(side ? 'entity_id as id' : 'id')) as Array<{ id: number }>) {
          if (owner === entityType && ids.includes(Number(h.id))) continue;
          if (!holders.has(owner)) holders.set(owner, new Set());
          holders.get(owner)!.add(Number(h.id));
        }
      }
    }
    return holders;
  }

  /**
   * The references to these records held at one place (referencesTo), as pairs of the record
   * referred to and the record holding the reference, in ascending holders; a record of the same
   * type among `ids` is left out (it goes with them).
   */
  async referencesAt(db: Db, place: ReferencePlace, ids: number[]): Promise<Array<{ target: number; holder: number }>> {
    const pairs: Array<{ target: number; holder: number }> = [];
    const holder = place.side ? 'entity_id' : 'id';
    for (const part of chunks(ids)) {
      const rows = (await db(place.table)
        .whereIn(place.column, part)
        .distinct(`${holder} as holder`, `${place.column} as target`)) as Array<{ holder: number; target: number }>;
      for (const row of rows) pairs.push({ target: Number(row.target), holder: Number(row.holder) });
    }
    const own = new Set(place.entityType === place.target ? ids : []);
    return pairs.filter((p) => !own.has(p.holder)).sort((a, b) => a.holder - b.holder);
  }

  /**
   * Make every reference to record `from` of the entity type refer to `to` instead (`tilth user
   * delete --reassign-to`); a record that names both keeps one. The records changed get a new
   * version in the change feed. On PostgreSQL the caller has locked them (entities/deletion-locks.ts).
   */
  async moveReferences(db: Db, entityType: string, from: number, to: number): Promise<void> {
    const holders = await this.holdersOf(db, entityType, [from]);
    for (const { table, column, side } of this.referencesTo(entityType)) {
      if (side)
        await db(table)
          .where(column, from)
          .whereIn('entity_id', db(table).where(column, to).select('entity_id'))
          .delete();
      await db(table)
        .where(column, from)
        .update({ [column]: to });
    }
    for (const [owner, found] of holders)
      await noteChangedIds(db, owner, this.registry.model.entityTypes[owner]!.table, [...found]);
  }

  private referenceCache = new Map<string, Array<{ table: string; column: string }>>();
  private holderCache = new Map<string, ReferencePlace[]>();

  /**
   * Every place a record of the entity type can be referred to from: a single reference's column
   * in its entity table, or a multi-valued one's side table (`entity_id` → `target_id`).
   */
  referencesTo(entityType: string): ReferencePlace[] {
    let cached = this.holderCache.get(entityType);
    if (cached) return cached;
    const seen = new Set<string>();
    cached = [];
    for (const bundle of this.registry.model.bundles) {
      for (const field of bundle.fields) {
        if (field.target?.entityType !== entityType) continue;
        const owner = bundle.entityType;
        const entry =
          field.storage.kind === 'columns'
            ? {
                entityType: owner,
                table: this.registry.model.entityTypes[owner]!.table,
                column: field.storage.columns.target_id!,
                side: false,
                target: entityType,
                field: field.name,
                fieldType: field.type,
              }
            : field.storage.kind === 'table'
              ? {
                  entityType: owner,
                  table: field.storage.table,
                  column: field.storage.columns.target_id!,
                  side: true,
                  target: entityType,
                  field: field.name,
                  fieldType: field.type,
                }
              : null;
        if (!entry || seen.has(`${entry.table}.${entry.column}`)) continue;
        seen.add(`${entry.table}.${entry.column}`);
        cached.push(entry);
      }
    }
    this.holderCache.set(entityType, cached);
    return cached;
  }

  /** Every (table, column) holding a single-valued reference to the entity type, across all bundles. */
  singleReferencesTo(entityType: string): Array<{ table: string; column: string }> {
    let cached = this.referenceCache.get(entityType);
    if (!cached) this.referenceCache.set(entityType, (cached = this.referencesTo(entityType).filter((r) => !r.side)));
    return cached;
  }
}
