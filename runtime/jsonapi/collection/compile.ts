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
import type { SqlDialect } from '../../storage/dialect.ts';
import type { FilterCondition, FilterGroup, FilterOperator } from '../query/filter.ts';
import type { SortField } from '../query/sort.ts';
import { resolvePath, type Hop, type ResolvedPath, type Terminal } from './paths.ts';
import { viewCondition } from '../../access/policy.ts';
import { badParameter } from '../../errors.ts';
import { parseTimestamp } from '../../values/timestamps.ts';
import { FIELD_TYPE_SPECS, type ColumnType } from '../../model/field-types.ts';

type Builder = Knex.QueryBuilder;

/**
 * A request's value (a filter's, the moment `at`, a cursor's) stands in the built query's bindings
 * as this placeholder, so that the SQL text is built once per query shape (collection/page.ts) and
 * the values are put in their places per request. A placeholder starts and ends with NUL; the
 * built query never holds a request's own value (those are only ever bound in a placeholder's
 * place), so nothing else in its bindings can look like one.
 */
export function slot(name: string): string {
  return `\u0000${name}\u0000`;
}

export function slotName(binding: unknown): string | null {
  return typeof binding === 'string' &&
    binding.length > 1 &&
    binding.charCodeAt(0) === 0 &&
    binding.charCodeAt(binding.length - 1) === 0
    ? binding.slice(1, -1)
    : null;
}

/** The moment at which computed locations are read (Unix seconds). */
const AT = slot('at');

/** Interval rows (alias `alias`: placements or group memberships) whose [start_ts, end_ts) holds the request's `at`. */
function during(qb: Builder, alias: string): void {
  qb.where(`${alias}.start_ts`, '<=', AT).where((w) =>
    w.whereNull(`${alias}.end_ts`).orWhere(`${alias}.end_ts`, '>', AT),
  );
}
type Scalar = string | number | boolean;

/** The filter's conditions, depth first: the order of their slots (`f<i>.<j>`). */
function eachCondition(group: FilterGroup, visit: (condition: FilterCondition) => void): void {
  for (const member of group.members) {
    if (member.kind === 'group') eachCondition(member, visit);
    else visit(member);
  }
}

const NEGATED: Partial<Record<FilterOperator, FilterOperator>> = {
  '<>': '=',
  'NOT IN': 'IN',
  'NOT BETWEEN': 'BETWEEN',
  'IS NULL': 'IS NOT NULL',
};

const TEXT_OPERATORS = new Set<FilterOperator>(['STARTS_WITH', 'CONTAINS', 'ENDS_WITH']);
/** The operators that compare a string field without regard to case (compareCaseless). */
const CASELESS_OPERATORS = new Set<FilterOperator>(['=', '<>', 'IN', 'NOT IN']);

/** A string field's value: farmOS's `string` fields are not case-sensitive. */
function isCaseless(t: Terminal | null): boolean {
  return t?.kind === 'property' && t.field.type === 'string' && t.property === 'value';
}

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
    private readonly dialect: SqlDialect,
  ) {}

  /**
   * Add the filter tree to a query on `rt`'s table aliased `e`, its values as slots: `f<i>.<j>`,
   * the j-th value of the i-th condition depth first, and `at`, the moment at which computed
   * locations are read. Every path is resolved and every value checked here, in the filter's
   * order, so the first invalid one is the error. Returns the conditions' paths, which
   * `filterValues` needs to fill the slots of a request of the same shape.
   */
  applyFilter(
    qb: Builder,
    rt: ResourceType,
    group: FilterGroup,
    principal: Principal,
    options: { rangeColumn?: string } = {},
  ): ResolvedPath[] {
    const paths: ResolvedPath[] = [];
    const index = new Map<FilterCondition, number>();
    eachCondition(group, (condition) => {
      const path = resolvePath(this.registry, rt, condition.path, principal, 'filter');
      if (path.terminal === null && condition.operator !== 'IS NULL' && condition.operator !== 'IS NOT NULL') {
        throw badParameter(
          'filter',
          `Invalid filter path "${condition.path}" (filter[${condition.key}]): a relationship path must end with "id" or a field of the related resource, e.g. "${condition.path}.id".`,
        );
      }
      this.bindingValues(path, condition);
      index.set(condition, paths.length);
      paths.push(path);
    });
    if (!group.members.length) return paths;
    // Knex runs these callbacks when it compiles the query, so what they need travels with them.
    const range = options.rangeColumn && this.dialect.rangesOneBoundPerColumn ? `e.${options.rangeColumn}` : null;
    qb.where((w) => this.group(w, group, principal, paths, index, range));
    return paths;
  }

  /**
   * The values of a filter's slots, for a filter of the shape `paths` were resolved for
   * (applyFilter): the same conditions in the same order, with other values. Checks them as
   * applyFilter does.
   */
  filterValues(paths: readonly ResolvedPath[], group: FilterGroup, into: Map<string, Scalar>): void {
    let i = 0;
    eachCondition(group, (condition) => {
      const n = i++;
      this.bindingValues(paths[n]!, condition).forEach((v, j) => into.set(`f${n}.${j}`, v));
    });
  }

  /*
   * `range`: a numeric entity column that a keyset cursor bounds (collection/page.ts). SQLite
   * ranges an index scan by one upper and one lower bound per column, and given a filter's bound
   * and the cursor's on the same column it may pick the filter's, reading every row before the
   * cursor; the filter's conditions on that column are then written `+e.column`, which SQLite
   * checks row by row instead of using for the range, so the cursor's bound is the one the index
   * seeks to.
   */
  private group(
    qb: Builder,
    group: FilterGroup,
    principal: Principal,
    paths: ResolvedPath[],
    index: Map<FilterCondition, number>,
    range: string | null,
  ): void {
    for (const member of group.members) {
      const apply = (w: Builder) =>
        member.kind === 'group'
          ? this.group(w, member, principal, paths, index, range)
          : this.condition(w, member, principal, paths, index.get(member)!, range);
      if (group.conjunction === 'OR') qb.orWhere(apply);
      else qb.andWhere(apply);
    }
  }

  private condition(
    qb: Builder,
    condition: FilterCondition,
    principal: Principal,
    paths: ResolvedPath[],
    i: number,
    range: string | null,
  ): void {
    const path = paths[i]!;
    const op = condition.operator;
    const count = condition.value === null ? 0 : Array.isArray(condition.value) ? condition.value.length : 1;
    const values = Array.from({ length: count }, (_, j) => slot(`f${i}.${j}`));
    const multi =
      path.hops.length > 0 ||
      (path.terminal?.kind === 'property' && path.terminal.side !== null) ||
      path.terminal === null;
    const positive = NEGATED[op];
    if (multi) {
      // Uncorrelated IN sub-queries: the database evaluates them once and seeks by index,
      // instead of testing every row of the collection.
      const { column, sub, nullable } = this.pathIn(path, path.hops, positive ?? op, values, principal, 0);
      if (positive && path.hops[0]?.timed) {
        // "Nowhere" (or "not in X"): a lookup of each listed asset's current placement by index,
        // rather than a list of every placed asset to exclude.
        qb.whereNotExists(sub.whereRaw('r0.entity_id = e.id'));
        return;
      }
      if (positive)
        qb.where((w) =>
          nullable ? w.whereNull(`e.${column}`).orWhereNotIn(`e.${column}`, sub) : w.whereNotIn(`e.${column}`, sub),
        );
      else qb.whereIn(`e.${column}`, sub);
      return;
    }
    const column = `e.${this.terminalColumn(path.terminal!)}`;
    this.compare(qb, column, op, values, { unindexed: column === range, caseless: isCaseless(path.terminal) });
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
  private pathIn(
    path: ResolvedPath,
    hops: Hop[],
    op: FilterOperator,
    values: Scalar[],
    principal: Principal,
    depth: number,
  ): { column: string; sub: Builder; nullable: boolean } {
    const [hop, ...rest] = hops;
    const t = path.terminal;
    if (!hop) {
      // A multi-valued attribute of the parent: its side table.
      if (t?.kind !== 'property' || !t.side) throw new Error('pathIn: no hop and no side-table terminal');
      const v = `v${depth}`;
      const sub = this.knex.select(`${v}.entity_id`).from(`${t.side} as ${v}`);
      this.compare(sub, `${v}.${t.column}`, op, values, { caseless: isCaseless(t) });
      return { column: 'id', sub, nullable: false };
    }
    const target = `t${depth}`;
    let sub: Builder;
    let column: string;
    if (hop.side) {
      const r = `r${depth}`;
      sub = this.knex
        .select(`${r}.entity_id`)
        .from(`${hop.side} as ${r}`)
        .join(`${hop.target.table} as ${target}`, `${target}.id`, `${r}.${hop.column}`);
      if (hop.timed) during(sub, r);
      column = 'id';
    } else {
      sub = this.knex.select(`${target}.id`).from(`${hop.target.table} as ${target}`);
      column = hop.column;
    }
    const allBundles = this.registry.bundlesOf(hop.target.entityType).length;
    if (hop.targetTypes.length < allBundles)
      sub.whereIn(
        `${target}.bundle`,
        hop.targetTypes.map((rt) => rt.bundle.bundle),
      );
    const guard = viewCondition(principal, hop.target, target);
    if (guard) guard(sub);
    if (rest.length) {
      const inner = this.pathIn(path, rest, op, values, principal, depth + 1);
      sub.whereIn(`${target}.${inner.column}`, inner.sub);
    } else if (t === null) {
      // The relationship itself: "has a related record".
    } else if (t.kind === 'property' && t.side) {
      const inner = this.pathIn(path, [], op, values, principal, depth + 1);
      sub.whereIn(`${target}.id`, inner.sub);
    } else {
      this.compare(sub, `${target}.${this.terminalColumn(t)}`, op, values, { caseless: isCaseless(t) });
    }
    return { column, sub, nullable: !hop.side };
  }

  private compare(
    qb: Builder,
    column: string,
    op: FilterOperator,
    values: Scalar[],
    { unindexed = false, caseless = false }: { unindexed?: boolean; caseless?: boolean } = {},
  ): void {
    if (caseless && CASELESS_OPERATORS.has(op)) {
      this.compareCaseless(qb, column, op, values, { unindexed });
      return;
    }
    if (unindexed && op !== 'IS NULL' && op !== 'IS NOT NULL') {
      // `+column`: the same test, not used to range the index scan (see group's `range`).
      const list = values.map(() => '?').join(', ');
      const sql =
        {
          IN: `+?? IN (${list})`,
          'NOT IN': `+?? NOT IN (${list})`,
          BETWEEN: '+?? BETWEEN ? AND ?',
          'NOT BETWEEN': '+?? NOT BETWEEN ? AND ?',
        }[op as string] ?? `+?? ${op} ?`;
      qb.whereRaw(sql, [column, ...(op === 'IN' || op === 'NOT IN' || op.endsWith('BETWEEN') ? values : [values[0]!])]);
      return;
    }
    // The pattern itself is the value (bindingValues).
    const like = (pattern: Scalar) => {
      qb.whereRaw(this.dialect.caselessLike(column), [pattern]);
    };
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
      case 'CONTAINS':
      case 'ENDS_WITH':
        like(v);
        return;
    }
  }

  /**
   * `=`, `<>`, `IN`, `NOT IN` on a string without regard to case, as farmOS compares (Drupal's
   * Condition::translateCondition, for a property that is not case-sensitive): `lower()` on both
   * sides on PostgreSQL, SQLite's NOCASE collation (ASCII letters only), each matching the label's
   * caseless index (generator/storage.ts).
   */
  private compareCaseless(
    qb: Builder,
    column: string,
    op: FilterOperator,
    values: Scalar[],
    { unindexed }: { unindexed: boolean },
  ): void {
    const sql = this.dialect.caselessCondition('??', op, op === 'IN' || op === 'NOT IN' ? values.length : 1, {
      unindexed,
    });
    qb.whereRaw(sql, op === 'IN' || op === 'NOT IN' ? [column, ...values] : [column, values[0]!]);
  }

  /** A condition's bound values: its values of the column's type, or for the text operators the LIKE pattern. */
  private bindingValues(path: ResolvedPath, condition: FilterCondition): Scalar[] {
    const values = this.convertValues(path, condition);
    if (!TEXT_OPERATORS.has(condition.operator)) return values;
    const escape = (s: string) => String(s).replace(/[\\%_]/g, (c) => `\\${c}`);
    const [before, after] = { STARTS_WITH: ['', '%'], CONTAINS: ['%', '%'], ENDS_WITH: ['%', ''] }[
      condition.operator as 'STARTS_WITH'
    ]!;
    return values.map((v) => `${before}${escape(String(v))}${after}`);
  }

  /** Convert filter values to the column's type: booleans, Unix seconds for timestamps, numbers. */
  private convertValues(path: ResolvedPath, condition: FilterCondition): Scalar[] {
    const raw = condition.value === null ? [] : Array.isArray(condition.value) ? condition.value : [condition.value];
    const t = path.terminal;
    const where = `filter[${condition.key}]`;
    for (const value of raw) {
      if (value.includes('\u0000'))
        throw badParameter('filter', `${where}: filter values may not contain the NUL character.`);
    }
    if (!t) return raw;
    if (TEXT_OPERATORS.has(condition.operator)) {
      const textual =
        t.kind === 'uuid' ||
        t.kind === 'bundle' ||
        (t.kind === 'property' && FIELD_TYPE_SPECS[t.field.type].properties[t.property]!.column === 'text');
      if (!textual)
        throw badParameter(
          'filter',
          `${where}: the ${condition.operator} operator works on text; "${condition.path}" is not text.`,
        );
      return raw;
    }
    const INT32 = 2_147_483_647;
    const wholeNumber = (value: string, max: number): number => {
      const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
      if (!Number.isSafeInteger(n) || Math.abs(n) > max) {
        throw badParameter(
          'filter',
          `${where}: "${value}" is not a whole number ${Number.isNaN(n) ? '' : `between -${max} and ${max} `}as "${condition.path}" needs.`,
        );
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
        if (s === null)
          throw badParameter(
            'filter',
            `${where}: "${value}" is not a date and time; use Unix seconds or an ISO 8601 date-time.`,
          );
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
        if (!/^-?\d{1,15}(\.\d{1,15})?$/.test(value))
          throw badParameter('filter', `${where}: "${value}" is not a number, as "${condition.path}" needs.`);
        return Number(value);
      }
      return value;
    });
  }

  /** ORDER BY keys for the sort; a plain column where possible, a correlated sub-query through relationships. */
  sortKeys(rt: ResourceType, sort: SortField[], principal: Principal): SortKey[] {
    return sort.map((s) => {
      const path = resolvePath(this.registry, rt, s.path, principal, 'sort');
      if (!path.terminal)
        throw badParameter(
          'sort',
          `Invalid sort path "${s.path}": sort by a field of the related resource, e.g. "${s.path}.name".`,
        );
      if (!path.hops.length && !(path.terminal.kind === 'property' && path.terminal.side)) {
        const column = this.terminalColumn(path.terminal);
        const t = path.terminal;
        const notNull = t.kind !== 'property' || t.field.required;
        const type: ColumnType =
          t.kind === 'internalId'
            ? 'integer'
            : t.kind === 'property'
              ? FIELD_TYPE_SPECS[t.field.type].properties[t.property]!.column
              : 'text';
        const numeric = ['integer', 'bigint', 'double', 'decimal'].includes(type);
        return { sql: `e.${column}`, bindings: [], direction: s.direction, column, notNull, numeric, type };
      }
      // Through relationships or multi-valued fields: the smallest (ASC) or largest (DESC) value.
      return this.subquerySortKey(path, s.direction, principal);
    });
  }

  /** A sort key through relationships or a multi-valued field, as one correlated sub-query with joins. */
  private subquerySortKey(path: ResolvedPath, direction: 'ASC' | 'DESC', principal: Principal): SortKey {
    const agg = direction === 'ASC' ? 'MIN' : 'MAX';
    const t = path.terminal!;
    if (!path.hops.length && t.kind === 'property' && t.side) {
      const q = this.knex
        .from(`${t.side} as cv`)
        .whereRaw('cv.entity_id = e.id')
        .select(this.knex.raw(`${agg}(cv.${t.column})`));
      const { sql, bindings } = q.toSQL();
      return { sql: `(${sql})`, bindings: bindings as Scalar[], direction, column: null };
    }
    const [first, ...rest] = path.hops;
    const q = this.knex.from(`${first!.target.table} as c0`);
    if (first!.side) {
      q.join(`${first!.side} as cr0`, `cr0.${first!.column}`, 'c0.id').whereRaw('cr0.entity_id = e.id');
      if (first!.timed) during(q, 'cr0');
    } else q.whereRaw(`c0.id = e.${first!.column}`);
    const guard0 = viewCondition(principal, first!.target, 'c0');
    if (guard0) guard0(q);
    rest.forEach((hop, i) => {
      const prev = `c${i}`;
      const cur = `c${i + 1}`;
      if (hop.side) {
        q.join(`${hop.side} as cr${i + 1}`, `cr${i + 1}.entity_id`, `${prev}.id`).join(
          `${hop.target.table} as ${cur}`,
          `${cur}.id`,
          `cr${i + 1}.${hop.column}`,
        );
        if (hop.timed) during(q, `cr${i + 1}`);
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
    return this.dialect.nullsFirst(direction);
  }
}
