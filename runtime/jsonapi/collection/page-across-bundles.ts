/**
 * One page of several bundles of an entity type in one order (the web interface's "all logs" and
 * "all assets", and the dashboard's tasks): each bundle's page query as fetchPage builds it (its
 * filter, access condition, keyset bound and bundle-first index), each limited to the page, put
 * together by UNION ALL and sorted once more outside. One statement whatever the rows and
 * whatever the farm's size: the database reads at most a page per bundle through its index,
 * where `bundle IN (...)` would sort every record of the type (a million logs on farm-L) for
 * each page. The cursor is fetchPage's, made for this set of bundles.
 */
import type { Knex } from 'knex';
import type { ResourceType } from '../../model/registry.ts';
import type { Principal } from '../../access/principal.ts';
import type { FilterGroup } from '../query/filter.ts';
import type { SortField } from '../query/sort.ts';
import type { PageRequest } from '../query/page.ts';
import { slotName, type QueryCompiler, type SortKey } from './compile.ts';
import {
  accessKey,
  buildPlan,
  fetchPage,
  filterShape,
  fingerprint,
  followedCursor,
  nextCursor,
  pageKeys,
  type PagePlan,
  type PageResult,
} from './page.ts';
import { selectRows } from '../../storage/sql.ts';
import { BoundedMemo } from '../../values/bounded-memo.ts';

/** The statement of one query shape across bundles: its parts' plans and its sort's keys. */
interface AcrossPlan {
  keys: SortKey[];
  keyset: boolean;
  parts: PagePlan[];
}

const plans = new WeakMap<QueryCompiler, BoundedMemo<AcrossPlan>>();

/**
 * The ids of one page of the records of `types` (bundles of one entity type) that `filter`
 * matches and `principal` may see, in `sort`'s order, as fetchPage gives them for one bundle.
 * The filter and sort must name fields every one of the bundles has (base fields).
 */
export async function fetchPageAcrossBundles(
  db: Knex | Knex.Transaction,
  compiler: QueryCompiler,
  types: readonly ResourceType[],
  filter: FilterGroup,
  sort: SortField[],
  page: PageRequest,
  principal: Principal,
  at: number = Math.floor(Date.now() / 1000),
): Promise<PageResult> {
  if (types.length === 1) return fetchPage(db, compiler, types[0]!, filter, sort, page, principal, at);
  if (!types.length) return { ids: [], hasMore: false };
  const names = types.map((t) => t.type);
  const hash = fingerprint(filter, sort, names);
  // The keys (and whether the cursor fits them) from the first bundle: the same base fields in all.
  const keys0 = pageKeys(compiler, types[0]!, sort, principal);
  const cursor = followedCursor(
    keys0.every((k) => k.column !== null),
    keys0,
    page,
    hash,
  );
  const start = cursor ? `c${cursor.v.map((v) => (v === null ? 'n' : 'v')).join('')}` : page.offset ? 'o' : '';
  let memo = plans.get(compiler);
  if (!memo) plans.set(compiler, (memo = new BoundedMemo<AcrossPlan>(500)));
  const key = JSON.stringify([
    names,
    accessKey(principal),
    sort.map((s) => [s.path, s.direction]),
    filterShape(filter),
    start,
  ]);
  const plan = memo.get(key, () => {
    const parts = types.flatMap((rt) => {
      const keys = pageKeys(compiler, rt, sort, principal);
      // Each part starts at the cursor (or at the top: the outer statement skips an offset).
      const part = buildPlan(db, compiler, rt, filter, keys, principal, {
        cursorValues: cursor ? cursor.v : null,
        offset: false,
      });
      // A part's NULLs that follow its bounded rows are a part of their own (fetchPage reads them by a second statement).
      return part.nulls ? [part, { ...part, sql: part.nulls.sql, bindings: part.nulls.bindings, nulls: null }] : [part];
    });
    return { keys: keys0, keyset: keys0.every((k) => k.column !== null), parts };
  });

  const values = new Map<string, string | number | boolean>([['at', at]]);
  if (cursor) cursor.v.forEach((v, i) => v !== null && values.set(`c${i}`, v));
  // Every part needs the page and what comes before it on the page: the offset, when the page starts at one.
  const skip = cursor ? 0 : page.offset;
  const each = skip + page.limit + 1;
  const bindings: Knex.RawBinding[] = [];
  const sql = plan.parts.map((part, i) => {
    const own = new Map(values);
    compiler.filterValues(part.paths, filter, own);
    for (const b of part.bindings) {
      const name = slotName(b);
      bindings.push(name === null ? b : own.get(name)!);
    }
    bindings.push(each);
    return `select * from (${part.sql} limit ?) as p${i}`;
  });
  // Outside, the same order by the columns the parts select: the id, and each other key as k<i>.
  const order = plan.keys.map((k, i) => `${k.column === 'id' ? 'id' : `k${i}`} ${k.direction}`).join(', ');
  bindings.push(page.limit + 1);
  if (skip) bindings.push(skip);
  const rows = await selectRows(
    db,
    `select * from (${sql.join(' union all ')}) as parts order by ${order} limit ?${skip ? ' offset ?' : ''}`,
    bindings,
  );
  const hasMore = rows.length > page.limit;
  const pageRows = rows.slice(0, page.limit);
  const result: PageResult = { ids: pageRows.map((r) => Number(r.id)), hasMore };
  if (hasMore && plan.keyset && pageRows.length)
    result.nextCursor = nextCursor(plan.keys, pageRows[pageRows.length - 1]!, page.offset + page.limit, hash);
  return result;
}
