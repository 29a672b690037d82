// Shared helpers for the query-layer tests (test/unit/query-*.test.ts).
import assert from 'node:assert/strict';
import { ApiError } from '../../runtime/errors.ts';
import type { FilterCondition, FilterGroup, FilterOperator } from '../../runtime/jsonapi/query/index.ts';

/** Parsed maps have a null prototype; turn them into plain objects so deepStrictEqual can compare. */
export function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, plain(item)]));
  }
  return value;
}

/** What a failing case expects: the 400's source.parameter and fragments of its detail. */
export interface Bad {
  parameter: string;
  detail: string[];
}

/** Assert that `run` throws a 400 ApiError naming `parameter`, whose detail contains every fragment. */
export function assertBadParameter(run: () => unknown, want: Bad): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof ApiError, `expected an ApiError, got ${String(error)}`);
    assert.equal(error.status, 400);
    assert.equal(error.source?.parameter, want.parameter);
    for (const fragment of want.detail)
      assert.ok(
        error.detail.includes(fragment),
        `detail ${JSON.stringify(error.detail)} lacks ${JSON.stringify(fragment)}`,
      );
    return true;
  });
}

/** A condition value object, for `want` tables. */
export function cond(
  key: string,
  path: string,
  operator: FilterOperator,
  value: FilterCondition['value'],
): FilterCondition {
  return { kind: 'condition', key, path, operator, value };
}

/** A group value object, for `want` tables. */
export function group(
  key: string,
  conjunction: 'AND' | 'OR',
  ...members: Array<FilterCondition | FilterGroup>
): FilterGroup {
  return { kind: 'group', key, conjunction, members };
}

/** The implicit root group holding `members`. */
export function root(...members: Array<FilterCondition | FilterGroup>): FilterGroup {
  return group('@root', 'AND', ...members);
}

/** The query part of a captured request target (`/api/log/activity?…`). */
export function queryOf(target: string): string {
  const mark = target.indexOf('?');
  return mark === -1 ? '' : target.slice(mark + 1);
}
