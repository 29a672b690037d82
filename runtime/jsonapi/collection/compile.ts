/**
 * Compiles parsed filters and sorts into one SQL query over the entity table (alias `e`), with
 * `IN (sub-query)` semi-joins for multi-valued fields and relationship paths (and correlated
 * sub-queries for sorts through them), so no join multiplies rows
 * and every lookup can use an index (bundle-first indexes, side-table indexes on value and
 * target). Works the same on SQLite and PostgreSQL. An asset's computed `location` and `group`
 * are read from their stored intervals (farm/placements.ts) as side tables with a time condition;
 * their negative conditions are a correlated NOT EXISTS, one index lookup per listed asset.
 *
 * Semantics for several values (multi-valued fields, relationships): a positive condition holds
 * when some value matches; `<>`, `NOT IN`, `NOT BETWEEN` and `IS NULL` hold when no value matches
 * the positive form ("not flagged review" includes logs with no flags).
 */
import type { Knex } from 'knex';
import type { ModelRegistry, ResourceType } from '../../model/registry.ts';
import type { Principal } from '../../access/principal.ts';
import type { Dialect } from '../../storage/database.ts';
import type { FilterCondition, FilterGroup, FilterOperator } from '../query/filter.ts';
import type { SortField } from '../query/sort.ts';
import { resolvePath, type Hop, type ResolvedPath, type Terminal } from './paths.ts';
import { viewCondition } from '../../access/policy.ts';
import { badParameter } from '../../errors.ts';
import { parseTimestamp } from '../../values/timestamps.ts';
import { FIELD_TYPE_SPECS, type ColumnType } from '../../model/field-types.ts';

type Builder = Knex.QueryBuilder;

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Interval rows (alias `alias`: placements or group memberships) whose [start_ts, end_ts) holds `at`. */
function during(qb: Builder, alias: string, at: number): void {
  qb.where(`${alias}.start_ts`, '<=', at).where((w) => w.whereNull(`${alias}.end_ts`).orWhere(`${alias}.end_ts`, '>', at));
}
type Scalar = string | number | boolean;

const NEGATED: Partial<Record<FilterOperator, FilterOperator>> = {
  '<>': '=',
  'NOT IN': 'IN',
  'NOT BETWEEN': 'BETWEEN',
  'IS NULL': 'IS NOT NULL',
};

const TEXT_OPERATORS = new Set<FilterOperator>(['STARTS_WITH', 'CONTAINS', 'ENDS_WITH']);

export interface SortKey {
  /** SQL expression and bindings for ORDER BY. */
  sql: string;
  bindings: Scalar[];
  direction: 'ASC' | 'DESC';
  /** The entity-table column when the key is a plain column (keyset paging needs it). */
  column: string | null;
  /** The column never holds NULL (ids, UUIDs, bundles, required fields): keyset paging may bound it as a range. */
  notNull?: boolean;
  /** The column holds numbers (ids, timestamps, integers). */
  numeric?: boolean;
  /** The column's type, where `column` is set: a cursor's values must fit it (collection/page.ts). */
  type?: ColumnType;
}

export class QueryCompiler {
  constructor(
    private readonly knex: Knex,
    private readonly registry: ModelRegistry,
    private readonly dialect: Dialect,
  ) {}

  /**
   * Add the filter tree to a query on `rt`'s table aliased `e`. `at` (Unix seconds) is the moment
   * at which computed locations are read: now, or the time a request asked for.
   */
  applyFilter(qb: Builder, rt: ResourceType, group: FilterGroup, principal: Principal, at = nowSeconds(), options: { rangeColumn?: string } = {}): void {
    if (!group.members.length) return;
    // Knex runs these callbacks when it compiles the query, so what they need travels with them.
    const range = options.rangeColumn && this.dialect === 'sqlite' ? `e.${options.rangeColumn}` : null;
    qb.where((w) => this.group(w, rt, group, principal, at, range));
  }

  /*
   * `range`: a numeric entity column that a keyset cursor bounds (collection/page.ts). SQLite
   * ranges an index scan by one upper and one lower bound per column, and given a filter's bound
   * and the cursor's on the same column it may pick the filter's, reading every row before the
   * cursor; the filter's conditions on that column are then written `+e.column`, which SQLite
   * checks row by row instead of using for the range, so the cursor's bound is the one the index
   * seeks to.
   */
  private group(qb: Builder, rt: ResourceType, group: FilterGroup, principal: Principal, at: number, range: string | null): void {
    for (const member of group.members) {
      const apply = (w: Builder) => (member.kind === 'group' ? this.group(w, rt, member, principal, at, range) : this.condition(w, rt, member, principal, at, range));
      if (group.conjunction === 'OR') qb.orWhere(apply);
      else qb.andWhere(apply);
    }
  }

  private condition(qb: Builder, rt: ResourceType, condition: FilterCondition, principal: Principal, at: number, range: string | null): void {
    const path = resolvePath(this.registry, rt, condition.path, principal, 'filter');
    const op = condition.operator;
    if (path.terminal === null && op !== 'IS NULL' && op !== 'IS NOT NULL') {
      throw badParameter(
        'filter',
        `Invalid filter path "${condition.path}" (filter[${condition.key}]): a relationship path must end with "id" or a field of the related resource, e.g. "${condition.path}.id".`,
      );
    }
    const values = this.convertValues(path, condition);
    const multi = path.hops.length > 0 || (path.terminal?.kind === 'property' && path.terminal.side !== null) || path.terminal === null;
    const positive = NEGATED[op];
    if (multi) {
      // Uncorrelated IN sub-queries: the database evaluates them once and seeks by index,
      // instead of testing every row of the collection.
      const { column, sub, nullable } = this.pathIn(path, path.hops, positive ?? op, values, principal, 0, at);
      if (positive && path.hops[0]?.timed) {
        // "Nowhere" (or "not in X"): a lookup of each listed asset's current placement by index,
        // rather than a list of every placed asset to exclude.
        qb.whereNotExists(sub.whereRaw('r0.entity_id = e.id'));
        return;
      }
      if (positive) qb.where((w) => (nullable ? w.whereNull(`e.${column}`).orWhereNotIn(`e.${column}`, sub) : w.whereNotIn(`e.${column}`, sub)));
      else qb.whereIn(`e.${column}`, sub);
      return;
    }
    const column = `e.${this.terminalColumn(path.terminal!)}`;
    this.compare(qb, column, op, values, column === range);
  }

  private terminalColumn(t: Terminal): string {
    switch (t.kind) {
      case 'uuid':
        return 'uuid';
      case 'internalId':
        return 'id';
      case 'bundle':
        return 'bundle';
      case 'property':
        return t.column;
    }
  }

  /**
   * A sub-query selecting the values of `column` (on the parent: its id, or a reference column)
   * for which the rest of the path holds. `nullable` tells whether that parent column may be NULL.
   */
  private pathIn(path: ResolvedPath, hops: Hop[], op: FilterOperator, values: Scalar[], principal: Principal, depth: number, at: number): { column: string; sub: Builder; nullable: boolean } {
    const [hop, ...rest] = hops;
    const t = path.terminal;
    if (!hop) {
      // A multi-valued attribute of the parent: its side table.
      if (t?.kind !== 'property' || !t.side) throw new Error('pathIn: no hop and no side-table terminal');
      const v = `v${depth}`;
      const sub = this.knex.select(`${v}.entity_id`).from(`${t.side} as ${v}`);
      this.compare(sub, `${v}.${t.column}`, op, values);
      return { column: 'id', sub, nullable: false };
    }
    const target = `t${depth}`;
    let sub: Builder;
    let column: string;
    if (hop.side) {
      const r = `r${depth}`;
      sub = this.knex.select(`${r}.entity_id`).from(`${hop.side} as ${r}`).join(`${hop.target.table} as ${target}`, `${target}.id`, `${r}.${hop.column}`);
      if (hop.timed) during(sub, r, at);
      column = 'id';
    } else {
      sub = this.knex.select(`${target}.id`).from(`${hop.target.table} as ${target}`);
      column = hop.column;
    }
    const allBundles = this.registry.bundlesOf(hop.target.entityType).length;
    if (hop.targetTypes.length < allBundles) sub.whereIn(`${target}.bundle`, hop.targetTypes.map((rt) => rt.bundle.bundle));
    const guard = viewCondition(principal, hop.target, target);
    if (guard) guard(sub);
    if (rest.length) {
      const inner = this.pathIn(path, rest, op, values, principal, depth + 1, at);
      sub.whereIn(`${target}.${inner.column}`, inner.sub);
    } else if (t === null) {
      // The relationship itself: "has a related record".
    } else if (t.kind === 'property' && t.side) {
      const inner = this.pathIn(path, [], op, values, principal, depth + 1, at);
      sub.whereIn(`${target}.id`, inner.sub);
    } else {
      this.compare(sub, `${target}.${this.terminalColumn(t)}`, op, values);
    }
    return { column, sub, nullable: !hop.side };
  }

  private compare(qb: Builder, column: string, op: FilterOperator, values: Scalar[], unindexed = false): void {
    if (unindexed && op !== 'IS NULL' && op !== 'IS NOT NULL') {
      // `+column`: the same test, not used to range the index scan (see group's `range`).
      const list = values.map(() => '?').join(', ');
      const sql = { 'IN': `+?? IN (${list})`, 'NOT IN': `+?? NOT IN (${list})`, BETWEEN: '+?? BETWEEN ? AND ?', 'NOT BETWEEN': '+?? NOT BETWEEN ? AND ?' }[op as string] ?? `+?? ${op} ?`;
      qb.whereRaw(sql, [column, ...(op === 'IN' || op === 'NOT IN' || op.endsWith('BETWEEN') ? values : [values[0]!])]);
      return;
    }
    const like = (pattern: string) => {
      if (this.dialect === 'postgres') qb.whereRaw(`${column} ILIKE ? ESCAPE '\\'`, [pattern]);
      else qb.whereRaw(`${column} LIKE ? ESCAPE '\\'`, [pattern]);
    };
    const escape = (s: string) => String(s).replace(/[\\%_]/g, (c) => `\\${c}`);
    const v = values[0]!;
    switch (op) {
      case '=':
      case '<>':
      case '>':
      case '>=':
      case '<':
      case '<=':
        qb.where(column, op, v);
        return;
      case 'IN':
        qb.whereIn(column, values);
        return;
      case 'NOT IN':
        qb.whereNotIn(column, values);
        return;
      case 'BETWEEN':
        qb.whereBetween(column, [values[0]!, values[1]!]);
        return;
      case 'NOT BETWEEN':
        qb.whereNotBetween(column, [values[0]!, values[1]!]);
        return;
      case 'IS NULL':
        qb.whereNull(column);
        return;
      case 'IS NOT NULL':
        qb.whereNotNull(column);
        return;
      case 'STARTS_WITH':
        like(`${escape(String(v))}%`);
        return;
      case 'CONTAINS':
        like(`%${escape(String(v))}%`);
        return;
      case 'ENDS_WITH':
        like(`%${escape(String(v))}`);
        return;
    }
  }

  /** Convert filter values to the column's type: booleans, Unix seconds for timestamps, numbers. */
  private convertValues(path: ResolvedPath, condition: FilterCondition): Scalar[] {
    const raw = condition.value === null ? [] : Array.isArray(condition.value) ? condition.value : [condition.value];
    const t = path.terminal;
    const where = `filter[${condition.key}]`;
    for (const value of raw) {
      if (value.includes('\u0000')) throw badParameter('filter', `${where}: filter values may not contain the NUL character.`);
    }
    if (!t) return raw;
    if (TEXT_OPERATORS.has(condition.operator)) {
      const textual = t.kind === 'uuid' || t.kind === 'bundle' || (t.kind === 'property' && FIELD_TYPE_SPECS[t.field.type].properties[t.property]!.column === 'text');
      if (!textual) throw badParameter('filter', `${where}: the ${condition.operator} operator works on text; "${condition.path}" is not text.`);
      return raw;
    }
    const INT32 = 2_147_483_647;
    const wholeNumber = (value: string, max: number): number => {
      const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(n) || Math.abs(n) > max) {
        throw badParameter('filter', `${where}: "${value}" is not a whole number ${Number.isNaN(n) ? '' : `between -${max} and ${max} `}as "${condition.path}" needs.`);
      }
      return n;
    };
    return raw.map((value) => {
      if (t.kind === 'uuid') return value.toLowerCase();
      if (t.kind === 'bundle') return value;
      if (t.kind === 'internalId') return wholeNumber(value, INT32);
      const column = FIELD_TYPE_SPECS[t.field.type].properties[t.property]!.column;
      if (t.field.type === 'timestamp') {
        const s = parseTimestamp(value);
        if (s === null) throw badParameter('filter', `${where}: "${value}" is not a date and time; use Unix seconds or an ISO 8601 date-time.`);
        return s;
      }
      if (column === 'boolean') {
        if (['1', 'true', 'TRUE', 'True'].includes(value)) return true;
        if (['0', 'false', 'FALSE', 'False'].includes(value)) return false;
        throw badParameter('filter', `${where}: "${value}" is not a boolean; use 1 or 0 (or true or false).`);
      }
      if (column === 'integer') return wholeNumber(value, INT32);
      if (column === 'bigint') return wholeNumber(value, Number.MAX_SAFE_INTEGER);
      if (column === 'double' || column === 'decimal') {
        if (!/^-?\d{1,15}(\.\d{1,15})?$/.test(value)) throw badParameter('filter', `${where}: "${value}" is not a number, as "${condition.path}" needs.`);
        return Number(value);
      }
      return value;
    });
  }

  /** ORDER BY keys for the sort; a plain column where possible, a correlated sub-query through relationships. */
  sortKeys(rt: ResourceType, sort: SortField[], principal: Principal, at = nowSeconds()): SortKey[] {
    return sort.map((s) => {
      const path = resolvePath(this.registry, rt, s.path, principal, 'sort');
      if (!path.terminal) throw badParameter('sort', `Invalid sort path "${s.path}": sort by a field of the related resource, e.g. "${s.path}.name".`);
      if (!path.hops.length && !(path.terminal.kind === 'property' && path.terminal.side)) {
        const column = this.terminalColumn(path.terminal);
        const t = path.terminal;
        const notNull = t.kind !== 'property' || t.field.required;
        const type: ColumnType = t.kind === 'internalId' ? 'integer' : t.kind === 'property' ? FIELD_TYPE_SPECS[t.field.type].properties[t.property]!.column : 'text';
        const numeric = ['integer', 'bigint', 'double', 'decimal'].includes(type);
        return { sql: `e.${column}`, bindings: [], direction: s.direction, column, notNull, numeric, type };
      }
      // Through relationships or multi-valued fields: the smallest (ASC) or largest (DESC) value.
      return this.subquerySortKey(path, s.direction, principal, at);
    });
  }

  /** A sort key through relationships or a multi-valued field, as one correlated sub-query with joins. */
  private subquerySortKey(path: ResolvedPath, direction: 'ASC' | 'DESC', principal: Principal, at: number): SortKey {
    const agg = direction === 'ASC' ? 'MIN' : 'MAX';
    const t = path.terminal!;
    if (!path.hops.length && t.kind === 'property' && t.side) {
      const q = this.knex.from(`${t.side} as cv`).whereRaw('cv.entity_id = e.id').select(this.knex.raw(`${agg}(cv.${t.column})`));
      const { sql, bindings } = q.toSQL();
      return { sql: `(${sql})`, bindings: bindings as Scalar[], direction, column: null };
    }
    const [first, ...rest] = path.hops;
    const q = this.knex.from(`${first!.target.table} as c0`);
    if (first!.side) {
      q.join(`${first!.side} as cr0`, `cr0.${first!.column}`, 'c0.id').whereRaw('cr0.entity_id = e.id');
      if (first!.timed) during(q, 'cr0', at);
    } else q.whereRaw(`c0.id = e.${first!.column}`);
    const guard0 = viewCondition(principal, first!.target, 'c0');
    if (guard0) guard0(q);
    rest.forEach((hop, i) => {
      const prev = `c${i}`;
      const cur = `c${i + 1}`;
      if (hop.side) {
        q.join(`${hop.side} as cr${i + 1}`, `cr${i + 1}.entity_id`, `${prev}.id`).join(`${hop.target.table} as ${cur}`, `${cur}.id`, `cr${i + 1}.${hop.column}`);
        if (hop.timed) during(q, `cr${i + 1}`, at);
      } else q.join(`${hop.target.table} as ${cur}`, `${cur}.id`, `${prev}.${hop.column}`);
      const guard = viewCondition(principal, hop.target, cur);
      if (guard) guard(q);
    });
    const last = `c${path.hops.length - 1}`;
    let expr: string;
    if (t.kind === 'property' && t.side) {
      q.join(`${t.side} as cv`, 'cv.entity_id', `${last}.id`);
      expr = `cv.${t.column}`;
    } else expr = `${last}.${this.terminalColumn(t)}`;
    q.select(this.knex.raw(`${agg}(${expr})`));
    const { sql, bindings } = q.toSQL();
    return { sql: `(${sql})`, bindings: bindings as Scalar[], direction, column: null };
  }

  /** Whether NULL sorts before other values in this direction on this database. */
  nullsFirst(direction: 'ASC' | 'DESC'): boolean {
    return this.dialect === 'sqlite' ? direction === 'ASC' : direction === 'DESC';
  }
}
