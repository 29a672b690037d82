/**
 * Fetches one page of a collection: the ids in order, whether more follow (limit + 1 rows, never
 * a count), and a keyset cursor for the next page. A cursor carries the sort values of the page's
 * last row, so following `links.next` seeks straight to the next page through the index instead of
 * skipping `offset` rows; an offset a client builds itself still works.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { ResourceType } from '../../model/registry.ts';
import type { Principal } from '../../access/principal.ts';
import type { FilterGroup } from '../query/filter.ts';
import type { SortField } from '../query/sort.ts';
import type { PageRequest } from '../query/page.ts';
import { QueryCompiler, slot, slotName, type SortKey } from './compile.ts';
import type { ResolvedPath } from './paths.ts';
import type { ColumnType } from '../../model/field-types.ts';
import { listCondition } from '../../access/policy.ts';
import { selectRows } from '../../storage/sql.ts';
import { BoundedMemo } from '../../values/bounded-memo.ts';

export interface PageResult {
  ids: number[];
  hasMore: boolean;
  /** Keyset hint for the next page, when the sort allows one. */
  nextCursor?: string;
}

export interface Cursor {
  /** The offset this cursor stands for. */
  o: number;
  /** The query it belongs to. */
  h: string;
  /** Sort values of the last row, then its id. */
  v: Array<string | number | boolean | null>;
}

/** The query a cursor belongs to: its filter and sort (and, for a page across bundles, which bundles: page-across-bundles.ts). */
export function fingerprint(filter: FilterGroup, sort: SortField[], types?: readonly string[]): string {
  return createHash('sha1')
    .update(JSON.stringify(types ? [filter, sort, types] : [filter, sort]))
    .digest('base64url')
    .slice(0, 10);
}

export function decodeCursor(text: string | undefined): Cursor | null {
  if (!text) return null;
  try {
    const c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Cursor;
    // The values are bound into SQL: a cursor made by hand with lists or objects in them is damaged.
    if (typeof c.o === 'number' && typeof c.h === 'string' && Array.isArray(c.v) && c.v.every(isSortValue)) return c;
  } catch {
    // A damaged cursor is ignored: the offset still says where the page starts.
  }
  return null;
}

function isSortValue(v: unknown): v is string | number | boolean | null {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** Largest value of an `integer` column on PostgreSQL (ids too), as filters check (compile.ts). */
const INT32 = 2_147_483_647;

/**
 * Whether a cursor's value can be bound for a column of this type. Rows give numbers, or numeric
 * text where PostgreSQL returns bigint and decimal columns as strings; SQLite gives booleans as 0/1.
 */
export function fits(type: ColumnType | undefined, v: string | number | boolean | null): boolean {
  if (v === null) return true;
  const whole = (max: number) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d{1,16}$/.test(v) ? Number(v) : NaN;
    return Number.isSafeInteger(n) && Math.abs(n) <= max;
  };
  switch (type) {
    case 'integer':
      return whole(INT32);
    case 'bigint':
      return whole(Number.MAX_SAFE_INTEGER);
    case 'double':
    case 'decimal':
      return typeof v === 'number' ? Number.isFinite(v) : typeof v === 'string' && /^-?\d{1,20}(\.\d{1,20})?$/.test(v);
    case 'boolean':
      return typeof v === 'boolean' || v === 0 || v === 1;
    default:
      return typeof v === 'string';
  }
}

/** The SQL of one query shape (PagePlans), its request values left as slots (compile.ts). */
export interface PagePlan {
  /** Up to ORDER BY; LIMIT and OFFSET are appended. */
  sql: string;
  bindings: readonly Knex.RawBinding[];
  /** Where NULLs follow the cursor's bound rows: the query without the bound, for NULLs only. */
  nulls: { sql: string; bindings: readonly Knex.RawBinding[] } | null;
  /** The filter's conditions' paths, depth first (QueryCompiler.filterValues). */
  paths: ResolvedPath[];
  offset: boolean;
}

/** The sort's keys for one (type, sort, caller) and the plans built for them, by how a page starts. */
interface SortPlan {
  keys: SortKey[];
  keyset: boolean;
  plans: Map<string, PagePlan>;
}

/**
 * Page queries built once per shape and kept (as storage/sql.ts keeps the record statements):
 * the resource type, the caller's access (resolvePath and viewCondition read its permissions,
 * user and client), the sort, the filter's paths, operators and number of values, and whether
 * the page starts at a cursor (which of its values are NULL) or an offset. The values themselves
 * (the filter's, the cursor's, `at`, the offset and the limit) are bound per request. Bounded:
 * shapes come from requests.
 */
const sortPlans = new WeakMap<QueryCompiler, BoundedMemo<SortPlan>>();
const PLANS_PER_SORT = 16;

/** The part of a caller that can change a page query's text or whether it may be built. */
const accessKeys = new WeakMap<ReadonlySet<string>, string>();
export function accessKey(principal: Principal): string {
  let permissions = accessKeys.get(principal.permissions);
  if (permissions === undefined) {
    permissions = [...principal.permissions].sort().join(' ');
    accessKeys.set(principal.permissions, permissions);
  }
  return `${principal.userId ?? ''}|${principal.clientId === null ? 0 : 1}|${permissions}`;
}

export function filterShape(group: FilterGroup): unknown {
  return [
    group.conjunction,
    group.members.map((m) =>
      m.kind === 'group'
        ? filterShape(m)
        : [m.path, m.operator, m.value === null ? -1 : Array.isArray(m.value) ? m.value.length : 1],
    ),
  ];
}

export async function fetchPage(
  db: Knex | Knex.Transaction,
  compiler: QueryCompiler,
  rt: ResourceType,
  filter: FilterGroup,
  sort: SortField[],
  page: PageRequest,
  principal: Principal,
  /** When computed locations are read (Unix seconds); now when absent. */
  at: number = Math.floor(Date.now() / 1000),
): Promise<PageResult> {
  let memo = sortPlans.get(compiler);
  if (!memo) sortPlans.set(compiler, (memo = new BoundedMemo<SortPlan>(500)));
  const sortKey = JSON.stringify([rt.type, accessKey(principal), sort.map((s) => [s.path, s.direction])]);
  const sortPlan = memo.get(sortKey, () => {
    const keys = pageKeys(compiler, rt, sort, principal);
    return { keys, keyset: keys.every((k) => k.column !== null), plans: new Map() };
  });
  const { keys, keyset } = sortPlan;

  const hash = fingerprint(filter, sort);
  const cursor = followedCursor(keyset, keys, page, hash);
  const following = cursor !== null;
  const start = following ? `c${cursor!.v.map((v) => (v === null ? 'n' : 'v')).join('')}` : page.offset ? 'o' : '';
  const planKey = JSON.stringify([filterShape(filter), start]);
  let plan = sortPlan.plans.get(planKey);
  if (!plan) {
    plan = buildPlan(db, compiler, rt, filter, keys, principal, {
      cursorValues: following ? cursor!.v : null,
      offset: Boolean(page.offset),
    });
    if (sortPlan.plans.size >= PLANS_PER_SORT) sortPlan.plans.delete(sortPlan.plans.keys().next().value!);
    sortPlan.plans.set(planKey, plan);
  }

  const values = new Map<string, string | number | boolean>([['at', at]]);
  compiler.filterValues(plan.paths, filter, values);
  if (following) cursor!.v.forEach((v, i) => v !== null && values.set(`c${i}`, v));
  const bind = (bindings: readonly Knex.RawBinding[]) =>
    bindings.map((b) => {
      const name = slotName(b);
      return name === null ? b : values.get(name)!;
    });
  const bindings = bind(plan.bindings);
  bindings.push(page.limit + 1);
  if (plan.offset) bindings.push(page.offset);
  let rows = await selectRows(db, `${plan.sql} limit ?${plan.offset ? ' offset ?' : ''}`, bindings);
  if (plan.nulls && rows.length <= page.limit) {
    // The bounded rows ran out before the page did: the NULLs that sort after them come next, by
    // a second statement that only the page where the values end needs. (One UNION ALL statement
    // of both parts sorted them afresh on every deep page: 1.7x the first page's statement.)
    // Two statements see two moments: a record whose value was emptied in between is read by
    // both, and kept once.
    const seen = new Set(rows.map((r) => Number(r.id)));
    const more = await selectRows(db, `${plan.nulls.sql} limit ?`, [
      ...bind(plan.nulls.bindings),
      page.limit + 1 - rows.length,
    ]);
    rows = rows.concat(more.filter((r) => !seen.has(Number(r.id))));
  }
  const hasMore = rows.length > page.limit;
  const pageRows = rows.slice(0, page.limit);
  const result: PageResult = { ids: pageRows.map((r) => Number(r.id)), hasMore };
  if (hasMore && keyset && pageRows.length)
    result.nextCursor = nextCursor(keys, pageRows[pageRows.length - 1]!, page.offset + page.limit, hash);
  return result;
}

/**
 * The page's cursor when the page starts at it: one made by this server for this query and this
 * offset. A cursor whose values do not fit the sort's columns was not made by this server for this
 * query (a database would refuse them as parameters): it is ignored like any damaged one.
 */
export function followedCursor(keyset: boolean, keys: SortKey[], page: PageRequest, hash: string): Cursor | null {
  const cursor = decodeCursor(page.cursor);
  return keyset &&
    cursor !== null &&
    cursor.o === page.offset &&
    cursor.h === hash &&
    cursor.v.length === keys.length &&
    keys.every((k, i) => fits(k.type, cursor.v[i]!))
    ? cursor
    : null;
}

/** The sort's keys, then the id (in the last key's direction) to break ties: every page has one order. */
export function pageKeys(
  compiler: QueryCompiler,
  rt: ResourceType,
  sort: SortField[],
  principal: Principal,
): SortKey[] {
  const keys = compiler.sortKeys(rt, sort, principal);
  const tieDirection = keys.length ? keys[keys.length - 1]!.direction : 'ASC';
  if (!keys.some((k) => k.column === 'id'))
    keys.push({ sql: 'e.id', bindings: [], direction: tieDirection, column: 'id', notNull: true, type: 'integer' });
  return keys;
}

/** The cursor of the page after one whose last row is `last` (a row of the page query: its id and its keys as k<i>). */
export function nextCursor(keys: SortKey[], last: Record<string, unknown>, offset: number, hash: string): string {
  const values = keys.map((k, i) => {
    const v = k.column === 'id' ? last.id : last[`k${i}`];
    return v === undefined ? null : (v as string | number | boolean | null);
  });
  const next: Cursor = { o: offset, h: hash, v: values };
  return Buffer.from(JSON.stringify(next)).toString('base64url');
}

/**
 * The page query for one shape, through Knex's builder, with every request value a slot: the
 * cursor's (`c<i>`, from which only which values are NULL is read), the filter's and `at`.
 * `start`: the values of the cursor the page follows (null for none), and whether it starts at an offset.
 */
export function buildPlan(
  db: Knex | Knex.Transaction,
  compiler: QueryCompiler,
  rt: ResourceType,
  filter: FilterGroup,
  keys: SortKey[],
  principal: Principal,
  start: { cursorValues: Cursor['v'] | null; offset: boolean },
): PagePlan {
  const { cursorValues, offset } = start;
  const qb = db(`${rt.entityType.table} as e`).where('e.bundle', rt.bundle.bundle);
  const guard = listCondition(principal, rt.entityType, 'e');
  if (guard) guard(qb);
  qb.select('e.id as id');
  keys.forEach((k, i) => {
    if (k.column !== 'id') qb.select(db.raw(`${k.sql} as k${i}`, k.bindings));
  });
  for (const k of keys) qb.orderByRaw(`${k.sql} ${k.direction}`, k.bindings);

  const values = cursorValues?.map((v, i) => (v === null ? null : slot(`c${i}`))) ?? null;
  let bound: [string, '>=' | '<=', string] | null = null;
  let nullsAfterBound = false;
  // The filter's own bounds on the cursor's column must not take the index range from it (compile.ts, `range`).
  const ranged = values && values[0] !== null && keys[0]!.numeric ? keys[0]!.column! : undefined;
  const paths = compiler.applyFilter(qb, rt, filter, principal, { rangeColumn: ranged });
  if (values) {
    // The first key as a range too (`timestamp <= v` for a descending sort), so the index seeks to
    // the cursor instead of reading every row before it: a deep page then costs what the first
    // does. Only where no NULL can come after the cursor in this order.
    const first = keys[0]!;
    if (values[0] !== null) {
      // Where NULLs of a nullable key sort after every value, they follow the bounded rows (read
      // once those run out, fetchPage).
      nullsAfterBound = !first.notNull && !compiler.nullsFirst(first.direction);
      bound = [`e.${first.column}`, first.direction === 'ASC' ? '>=' : '<=', values[0]!];
    }
    qb.whereRaw(...afterCursor(compiler, keys, values));
  }
  // Compiled here and run as raw SQL: outside a transaction on SQLite that is the read connection.
  const nulls = bound && nullsAfterBound ? qb.clone().whereNull(bound[0]).toSQL() : null;
  if (bound) qb.where(...bound);
  const { sql, bindings } = qb.toSQL();
  return {
    sql,
    bindings,
    nulls: nulls && { sql: nulls.sql, bindings: nulls.bindings },
    paths,
    offset: offset && !values,
  };
}

/**
 * "After the cursor's row" in the sort's order, lexicographically over the keys, with NULLs where
 * this database sorts them: one raw condition, built as text (Knex's nested builders cost more to
 * compile than the statement costs to run).
 */
function afterCursor(
  compiler: QueryCompiler,
  keys: SortKey[],
  values: Array<string | null>,
): [string, Array<string | number | boolean>] {
  const bindings: Array<string | number | boolean> = [];
  const column = (k: SortKey) => `e."${k.column}"`;
  const alternatives = keys.map((key, j) => {
    const terms: string[] = [];
    for (let i = 0; i < j; i++) {
      const v = values[i];
      if (v === null || v === undefined) terms.push(`${column(keys[i]!)} IS NULL`);
      else {
        terms.push(`${column(keys[i]!)} = ?`);
        bindings.push(v);
      }
    }
    const v = values[j];
    const op = key.direction === 'ASC' ? '>' : '<';
    if (compiler.nullsFirst(key.direction)) {
      if (v === null || v === undefined) terms.push(`${column(key)} IS NOT NULL`);
      else {
        terms.push(`${column(key)} ${op} ?`);
        bindings.push(v);
      }
    } else if (v === null || v === undefined) terms.push('1 = 0');
    else {
      terms.push(`(${column(key)} ${op} ? OR ${column(key)} IS NULL)`);
      bindings.push(v);
    }
    return `(${terms.join(' AND ')})`;
  });
  return [`(${alternatives.join(' OR ')})`, bindings];
}
