/**
 * The SQL text of storage/records.ts's statements, built once per entity type and shape and kept
 * (RecordSql's memos): reading rows with their single references' targets joined, reading every
 * side table of a page in one statement, inserting rows.
 */
import type { FieldDescriptor, EntityTypeDescriptor } from '../model/descriptor.ts';
import type { ModelRegistry } from '../model/registry.ts';
import { SqlMemo, quoteName as quote } from './sql.ts';
import type { SqlDialect } from './dialect.ts';
import { FEED_TABLE } from './change-feed.ts';
import { isReferenceField } from './record-values.ts';

/** Most bound parameters of one statement: SQLite's limit (32766) is the lower of the two (PostgreSQL's is 65535). */
export const MAX_PARAMETERS = 32766;

/** Rows of `columns` columns one multi-row statement can take; at most 500, so that its text stays short. */
export function rowsPerStatement(columns: number): number {
  return Math.max(1, Math.min(500, Math.floor(MAX_PARAMETERS / columns)));
}

/** `INSERT INTO table (columns) VALUES (?, …)`, with `rows` rows of placeholders. */
export function insertSql(table: string, columns: readonly string[], rows = 1): string {
  const row = `(${columns.map(() => '?').join(', ')})`;
  return `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES ${Array.from({ length: rows }, () => row).join(', ')}`;
}

/** A LEFT JOIN of a single-valued reference column's target (RecordSql.singleReferenceJoins). */
export interface SingleReferenceJoin {
  column: string;
  table: string;
  alias: string;
  revisions: boolean;
}

/** The SQL text of one RecordStore's statements, and the memos that keep it. */
export class RecordSql {
  /** Built SQL text, by entity type and shape: reads, and writes apart (a PATCH's columns vary with what it sends). */
  readonly reads = new SqlMemo();
  readonly writes = new SqlMemo();
  private readonly joinCache = new Map<
    string,
    Array<{ column: string; table: string; alias: string; revisions: boolean }>
  >();

  /** One LEFT JOIN per single-valued reference column of the entity type. */
  singleReferenceJoins(
    entityType: string,
  ): Array<{ column: string; table: string; alias: string; revisions: boolean }> {
    let joins = this.joinCache.get(entityType);
    if (joins) return joins;
    joins = [];
    const seen = new Set<string>();
    for (const bundle of this.registry.model.bundles) {
      if (bundle.entityType !== entityType) continue;
      for (const field of bundle.fields) {
        if (!isReferenceField(field) || field.storage.kind !== 'columns') continue;
        const column = field.storage.columns.target_id!;
        if (seen.has(column)) continue;
        seen.add(column);
        const target = this.entityType(field.target!.entityType);
        joins.push({ column, table: target.table, alias: `j${joins.length}`, revisions: Boolean(target.revisionId) });
      }
    }
    this.joinCache.set(entityType, joins);
    return joins;
  }

  /**
   * The statement reading rows of an entity type (`columns`, or all) with their single references'
   * targets joined; with `withVersion`, also each row's change feed position (`tilth_version`, one
   * lookup by the feed's key, its entity type the statement's first parameter): a record read for
   * its ETag then needs no second statement (storage/change-feed.ts versionOf reads the same).
   */
  rowsSql(
    entityType: string,
    columns: string[] | null,
    where: string,
    options: { withVersion?: boolean } = {},
  ): string {
    const et = this.entityType(entityType);
    const selected = columns ? columns.map((c) => `e.${quote(c)}`) : ['e.*'];
    if (options.withVersion)
      selected.push(`(SELECT position FROM ${FEED_TABLE} WHERE entity_type = ? AND entity_id = e.id) AS tilth_version`);
    const from = [`${quote(et.table)} AS e`];
    for (const j of this.singleReferenceJoins(entityType)) {
      if (columns && !columns.includes(j.column)) continue;
      selected.push(`${j.alias}.uuid AS ${j.alias}_uuid`, `${j.alias}.bundle AS ${j.alias}_bundle`);
      if (j.revisions) selected.push(`${j.alias}.revision_id AS ${j.alias}_rev`);
      from.push(`LEFT JOIN ${quote(j.table)} AS ${j.alias} ON ${j.alias}.id = e.${quote(j.column)}`);
    }
    return `SELECT ${selected.join(', ')} FROM ${from.join(' ')} WHERE ${where}`;
  }

  /**
   * Every side table of `fields` in one statement, the branches lined up column by column. On
   * SQLite a branch selects its field's properties as columns v0, v1, … (NULL where it has fewer);
   * PostgreSQL wants one type per column of a UNION, so there each branch selects its properties
   * as one JSON object instead. Each branch joins the reference's target.
   */
  sideTablesSql(dialect: SqlDialect, fields: FieldDescriptor[], options: { single?: boolean } = {}): string {
    const width = Math.max(
      ...fields.map((f) => Object.keys((f.storage as { columns: Record<string, string> }).columns).length),
    );
    const branches = fields.map((field, i) => {
      const { table, columns } = field.storage as { table: string; columns: Record<string, string> };
      const target = isReferenceField(field) ? this.entityType(field.target!.entityType) : null;
      const stored = Object.values(columns);
      const props = dialect.unionOfOneType
        ? `json_build_object(${Object.entries(columns)
            .flatMap(([prop, column]) => [`'${prop}'`, `s.${quote(column)}`])
            .join(', ')}) AS p`
        : Array.from(
            { length: width },
            (_, j) => `${j < stored.length ? `s.${quote(stored[j]!)}` : 'NULL'} AS v${j}`,
          ).join(', ');
      const targetColumns = target
        ? `t.uuid AS t_uuid, t.bundle AS t_bundle, ${target.revisionId ? 't.revision_id' : 'CAST(NULL AS integer)'} AS t_rev`
        : 'CAST(NULL AS text) AS t_uuid, CAST(NULL AS text) AS t_bundle, CAST(NULL AS integer) AS t_rev';
      const join = target ? ` LEFT JOIN ${quote(target.table)} AS t ON t.id = s.target_id` : '';
      return `SELECT ${i} AS k, s.entity_id, s.delta, ${props}, ${targetColumns} FROM ${quote(table)} AS s${join} WHERE ${dialect.inIdList('s.entity_id', options)}`;
    });
    return `SELECT * FROM (${branches.join(' UNION ALL ')}) AS u ORDER BY entity_id, k, delta`;
  }

  constructor(readonly registry: ModelRegistry) {}

  entityType(name: string): EntityTypeDescriptor {
    return this.registry.model.entityTypes[name]!;
  }
}
