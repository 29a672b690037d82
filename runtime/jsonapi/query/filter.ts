/**
 * The `filter` parameter as Drupal core's JSON:API reads it (Query/Filter.php, EntityCondition.php;
 * farmos-behaviour.md §4.4), turned into a tree of value objects. Field paths stay dotted strings:
 * resolving them against the data model, and access checks on them, happen elsewhere.
 *
 * Accepted forms, by filter key `k`:
 * - `filter[k]=v`                                   condition path=k, operator `=`
 * - `filter[k][value]=v[&filter[k][path]=p][&filter[k][operator]=op]`   shorthand with keys
 * - `filter[k][condition][path|operator|value|memberOf]`                 full condition
 * - `filter[k][group][conjunction|memberOf]`                             group
 * Members join the group their `memberOf` names, or the implicit AND root `@root`.
 */

import type { ApiError } from '../../errors.ts';
import { badParameter } from '../../errors.ts';
import { pathProblem } from './path.ts';
import { asciiUpper, entriesOf, getKey, hasKey, isContainer, listItems, type Container } from './values.ts';

/** Every operator Drupal's EntityCondition allows, in its spelling. */
export const FILTER_OPERATORS = [
  '=',
  '<>',
  '>',
  '>=',
  '<',
  '<=',
  'STARTS_WITH',
  'CONTAINS',
  'ENDS_WITH',
  'IN',
  'NOT IN',
  'BETWEEN',
  'NOT BETWEEN',
  'IS NULL',
  'IS NOT NULL',
] as const;

export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** The reserved key of the implicit root group. */
export const ROOT_GROUP_KEY = '@root';

/**
 * One condition. `value` is null for IS NULL / IS NOT NULL, a list for IN / NOT IN (at least one
 * item) and BETWEEN / NOT BETWEEN (exactly two), and a single string for every other operator.
 */
export interface FilterCondition {
  kind: 'condition';
  key: string;
  path: string;
  operator: FilterOperator;
  value: string | string[] | null;
}

/** A group of conditions and groups; the root has key `@root` and conjunction AND. */
export interface FilterGroup {
  kind: 'group';
  key: string;
  conjunction: 'AND' | 'OR';
  members: Array<FilterCondition | FilterGroup>;
}

/** A top-level filter entry once its form is known, before the tree is assembled. */
type Entry = {
  key: string;
  memberOf: string;
  /** The parameter to blame when `memberOf` is wrong. */
  memberOfParameter: string;
} & ({ kind: 'condition'; condition: FilterCondition } | { kind: 'group'; conjunction: 'AND' | 'OR' });

const OPERATORS: ReadonlySet<string> = new Set(FILTER_OPERATORS);
const NO_VALUE_OPERATORS: ReadonlySet<string> = new Set(['IS NULL', 'IS NOT NULL']);
const LIST_OPERATORS: ReadonlySet<string> = new Set(['IN', 'NOT IN']);
const RANGE_OPERATORS: ReadonlySet<string> = new Set(['BETWEEN', 'NOT BETWEEN']);
const CONDITION_KEYS: ReadonlySet<string> = new Set(['path', 'operator', 'value', 'memberOf']);
const GROUP_KEYS: ReadonlySet<string> = new Set(['conjunction', 'memberOf']);

/**
 * Parse the `filter` parameter (as parseQueryString left it) into its condition tree. Absent
 * (`undefined`) gives an empty root group. Every mistake is a 400 whose `source.parameter` is the
 * most precise bracketed parameter at fault and whose detail names the filter key.
 */
export function parseFilter(param: unknown): FilterGroup {
  if (param === undefined) return { kind: 'group', key: ROOT_GROUP_KEY, conjunction: 'AND', members: [] };
  if (!isContainer(param)) {
    throw badParameter('filter', 'The filter parameter must be a set of keyed filters, e.g. filter[status]=done.');
  }
  const entries = entriesOf(param).map(([key, item]) => readEntry(key, item));
  checkMembership(entries);
  return assemble(entries);
}

function fail(parameter: string, key: string, sentence: string): ApiError {
  return badParameter(parameter, `${sentence} Filter key: '${key}'.`);
}

function readEntry(key: string, item: unknown): Entry {
  const at = `filter[${key}]`;
  if (key === ROOT_GROUP_KEY) throw fail(at, key, `'${ROOT_GROUP_KEY}' is a reserved filter id.`);
  // Extreme shorthand, `filter[status]=done`: the key is the path.
  if (!isContainer(item)) return readCondition(key, { value: item }, at, key, { bare: true });
  if (hasKey(item, 'group')) return readGroup(key, item, at);
  if (hasKey(item, 'condition')) {
    rejectUnknownKeys(item, new Set(['condition']), at, key, "a filter with a 'condition' key");
    const condition = getKey(item, 'condition');
    if (!isContainer(condition)) {
      throw fail(`${at}[condition]`, key, "A filter condition needs 'path', 'operator' and 'value' keys.");
    }
    return readCondition(key, condition, `${at}[condition]`, undefined);
  }
  // Shorthand with keys (`filter[k][value]=v`): the key is the default path.
  if (entriesOf(item).some(([name]) => CONDITION_KEYS.has(name))) return readCondition(key, item, at, key);
  throw fail(at, key, "A filter needs a 'condition' or a 'group' key, or a value as in filter[status]=done.");
}

function readGroup(key: string, item: Container, at: string): Entry {
  rejectUnknownKeys(item, new Set(['group', 'condition']), at, key, "a filter with a 'group' key");
  const group = getKey(item, 'group');
  if (!isContainer(group)) throw fail(`${at}[group]`, key, "A filter group needs a 'conjunction' key (AND or OR).");
  rejectUnknownKeys(group, GROUP_KEYS, `${at}[group]`, key, 'a filter group');
  const conjunction = readConjunction(group, `${at}[group][conjunction]`, key);
  // farmOS.js writes a nested group's membership as `filter[g][condition][memberOf]`; Drupal reads
  // memberOf from there first, and the group still wins over the otherwise empty condition.
  if (hasKey(item, 'condition')) {
    const condition = getKey(item, 'condition');
    if (!isContainer(condition) || entriesOf(condition).some(([name]) => name !== 'memberOf')) {
      throw fail(at, key, 'A filter cannot be both a condition and a group.');
    }
    if (hasKey(condition, 'memberOf')) {
      const parameter = `${at}[condition][memberOf]`;
      return {
        kind: 'group',
        key,
        conjunction,
        memberOf: readMemberOf(condition, parameter, key),
        memberOfParameter: parameter,
      };
    }
  }
  const parameter = `${at}[group][memberOf]`;
  return {
    kind: 'group',
    key,
    conjunction,
    memberOf: readMemberOf(group, parameter, key),
    memberOfParameter: parameter,
  };
}

/**
 * Read a condition from its fields. `base` is the bracketed parameter holding them; with
 * `bare` the filter parameter itself is the value (`filter[status]=done`). A path taken from
 * the filter key is blamed on `base`, since the client sent no `[path]` parameter.
 */
function readCondition(
  key: string,
  fields: Container,
  base: string,
  defaultPath: string | undefined,
  { bare = false }: { bare?: boolean } = {},
): Entry {
  rejectUnknownKeys(fields, CONDITION_KEYS, base, key, 'a filter condition');
  const pathParameter = hasKey(fields, 'path') || defaultPath === undefined ? `${base}[path]` : base;
  const path = readPath(fields, defaultPath, pathParameter, key);
  const operator = readOperator(fields, `${base}[operator]`, key);
  const value = readValue(fields, operator, bare ? base : `${base}[value]`, key);
  const parameter = `${base}[memberOf]`;
  return {
    kind: 'condition',
    key,
    condition: { kind: 'condition', key, path, operator, value },
    memberOf: readMemberOf(fields, parameter, key),
    memberOfParameter: parameter,
  };
}

function rejectUnknownKeys(
  container: Container,
  allowed: ReadonlySet<string>,
  base: string,
  key: string,
  what: string,
): void {
  for (const [name] of entriesOf(container)) {
    if (!allowed.has(name)) {
      throw fail(
        `${base}[${name}]`,
        key,
        `The '${name}' key is not allowed in ${what}; allowed: ${[...allowed].join(', ')}.`,
      );
    }
  }
}

function readPath(fields: Container, defaultPath: string | undefined, parameter: string, key: string): string {
  const path = hasKey(fields, 'path') ? getKey(fields, 'path') : defaultPath;
  if (path === undefined) throw fail(parameter, key, "Filter parameter is missing a 'path' key.");
  if (typeof path !== 'string') throw fail(parameter, key, 'The filter path must be a string.');
  const problem = pathProblem(path);
  if (problem) throw fail(parameter, key, `The filter path ${problem}.`);
  return path;
}

function readOperator(fields: Container, parameter: string, key: string): FilterOperator {
  if (!hasKey(fields, 'operator')) return '=';
  const given = getKey(fields, 'operator');
  if (typeof given !== 'string') throw fail(parameter, key, 'The filter operator must be a string.');
  // The word operators are accepted in any case; symbols are unaffected by upper-casing.
  const operator = asciiUpper(given);
  if (!OPERATORS.has(operator))
    throw fail(parameter, key, `The '${given}' operator is not allowed in a filter parameter.`);
  return operator as FilterOperator;
}

function readValue(
  fields: Container,
  operator: FilterOperator,
  parameter: string,
  key: string,
): string | string[] | null {
  const present = hasKey(fields, 'value');
  const given = getKey(fields, 'value');
  if (NO_VALUE_OPERATORS.has(operator)) {
    if (present) throw fail(parameter, key, `Filters using the '${operator}' operator should not provide a value.`);
    return null;
  }
  if (!present) throw fail(parameter, key, "Filter parameter is missing a 'value' key.");
  if (LIST_OPERATORS.has(operator)) {
    const list = readList(given, operator, parameter, key);
    if (list.length === 0) throw fail(parameter, key, `The '${operator}' operator needs a non-empty list of values.`);
    return list;
  }
  if (RANGE_OPERATORS.has(operator)) {
    const list = readList(given, operator, parameter, key);
    if (list.length !== 2)
      throw fail(parameter, key, `The '${operator}' operator needs exactly two values, got ${list.length}.`);
    return list;
  }
  if (typeof given === 'string') return given;
  // farmOS.py sends `[value][]=5` for `>`, `<` and `<>`; Drupal 9's database layer reduced a
  // one-item list to its item, and farmOS 2.x clients rely on that.
  const items = listItems(given);
  if (items === null)
    throw fail(parameter, key, `The '${operator}' operator needs a single string value, not an object.`);
  if (items.length !== 1)
    throw fail(parameter, key, `The '${operator}' operator needs a single value, got ${items.length}.`);
  const only = items[0];
  if (typeof only !== 'string')
    throw fail(parameter, key, `The '${operator}' operator needs a single string value, not an object.`);
  return only;
}

/** A list value; a single string is a one-item list (`filter[k][condition][value]=done` with IN). */
function readList(given: unknown, operator: FilterOperator, parameter: string, key: string): string[] {
  if (typeof given === 'string') return [given];
  const items = listItems(given);
  if (items === null) {
    throw fail(
      parameter,
      key,
      `The '${operator}' operator needs a list of values (value[]=a&value[]=b), not an object.`,
    );
  }
  if (!items.every((item): item is string => typeof item === 'string')) {
    throw fail(parameter, key, `Each value of the '${operator}' operator must be a string, not an object.`);
  }
  return items;
}

function readConjunction(group: Container, parameter: string, key: string): 'AND' | 'OR' {
  if (!hasKey(group, 'conjunction'))
    throw fail(parameter, key, "A filter group needs a 'conjunction' key (AND or OR).");
  const given = getKey(group, 'conjunction');
  if (typeof given !== 'string') throw fail(parameter, key, 'The filter group conjunction must be AND or OR.');
  const conjunction = asciiUpper(given);
  if (conjunction !== 'AND' && conjunction !== 'OR') {
    throw fail(parameter, key, `The '${given}' conjunction is not allowed in a filter group; use AND or OR.`);
  }
  return conjunction;
}

function readMemberOf(fields: Container, parameter: string, key: string): string {
  if (!hasKey(fields, 'memberOf')) return ROOT_GROUP_KEY;
  const memberOf = getKey(fields, 'memberOf');
  if (typeof memberOf !== 'string') throw fail(parameter, key, 'memberOf must be the key of a filter group.');
  return memberOf;
}

/** Every memberOf names an existing group, and no group is (indirectly) a member of itself. */
function checkMembership(entries: Entry[]): void {
  const byKey = new Map(entries.map((entry) => [entry.key, entry]));
  for (const entry of entries) {
    if (entry.memberOf === ROOT_GROUP_KEY) continue;
    const parent = byKey.get(entry.memberOf);
    if (parent === undefined) {
      throw fail(entry.memberOfParameter, entry.key, `memberOf '${entry.memberOf}' does not name a filter group.`);
    }
    if (parent.kind !== 'group') {
      throw fail(
        entry.memberOfParameter,
        entry.key,
        `memberOf '${entry.memberOf}' names a filter condition, not a group.`,
      );
    }
  }
  // Walk each group's chain up to the root; groups already known to reach it end the walk early.
  const reachesRoot = new Set<string>();
  for (const start of entries) {
    if (start.kind !== 'group') continue;
    const chain: Entry[] = [];
    const onChain = new Set<string>();
    let current: Entry | undefined = start;
    while (current !== undefined && !reachesRoot.has(current.key)) {
      if (onChain.has(current.key)) {
        const loop = [...chain.slice(chain.indexOf(current)).map((entry) => entry.key), current.key].join(' → ');
        throw fail(
          current.memberOfParameter,
          current.key,
          `The filter group '${current.key}' is a member of itself: ${loop}.`,
        );
      }
      chain.push(current);
      onChain.add(current.key);
      current = current.memberOf === ROOT_GROUP_KEY ? undefined : byKey.get(current.memberOf);
    }
    for (const entry of chain) reachesRoot.add(entry.key);
  }
}

/** Attach every entry to its group, keeping the order of the query string. */
/** The deepest nesting of filter groups accepted (farmOS.js nests two or three). */
export const MAX_FILTER_DEPTH = 10;

function assemble(entries: Entry[]): FilterGroup {
  const children = new Map<string, Entry[]>();
  for (const entry of entries) {
    const siblings = children.get(entry.memberOf);
    if (siblings) siblings.push(entry);
    else children.set(entry.memberOf, [entry]);
  }
  const build = (key: string, conjunction: 'AND' | 'OR', depth: number): FilterGroup => {
    if (depth > MAX_FILTER_DEPTH)
      throw fail(`filter[${key}]`, key, `Filter groups are nested more than ${MAX_FILTER_DEPTH} deep.`);
    return {
      kind: 'group',
      key,
      conjunction,
      members: (children.get(key) ?? []).map((entry) =>
        entry.kind === 'condition' ? entry.condition : build(entry.key, entry.conjunction, depth + 1),
      ),
    };
  };
  return build(ROOT_GROUP_KEY, 'AND', 0);
}
