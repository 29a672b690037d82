/**
 * The query-string layer of the JSON:API runtime: pure functions from a raw query string to value
 * objects, with every mistake a 400 naming the parameter. No database, no HTTP.
 */

import { badParameter } from '../../errors.ts';
import { parseFields } from './fields.ts';
import { parseFilter, type FilterGroup } from './filter.ts';
import { parseInclude } from './include.ts';
import { parsePage, type PageRequest } from './page.ts';
import { parseQueryString, type QueryObject } from './query-string.ts';
import { parseSort, type SortField } from './sort.ts';
import { parseResourceVersion, RESOURCE_VERSION_PARAMETER, type ResourceVersion } from './resource-version.ts';
import { parseAsOf } from './as-of.ts';

export { buildQueryString } from './build-query-string.ts';
export { fieldsetsToRead, parseFields } from './fields.ts';
export { FILTER_OPERATORS, MAX_FILTER_DEPTH, ROOT_GROUP_KEY, parseFilter } from './filter.ts';
export type { FilterCondition, FilterGroup, FilterOperator } from './filter.ts';
export { MAX_INCLUDE_PATHS, parseInclude } from './include.ts';
export { MAX_PATH_SEGMENTS } from './path.ts';
export { MAX_CURSOR_LENGTH, MAX_PAGE_LIMIT, parsePage } from './page.ts';
export type { PageRequest } from './page.ts';
export { MAX_DEPTH, MAX_PARAMETERS, parseQueryString } from './query-string.ts';
export type { QueryObject, QueryValue } from './query-string.ts';
export { parseSort } from './sort.ts';
export type { SortField } from './sort.ts';
export { parseResourceVersion, RESOURCE_VERSION_PARAMETER } from './resource-version.ts';
export type { ResourceVersion } from './resource-version.ts';
export { AS_OF_PARAMETER, parseAsOf } from './as-of.ts';

/** The query parameters JSON:API reserves for itself. */
export const RESERVED_PARAMETERS: readonly string[] = ['filter', 'sort', 'page', 'fields', 'include'];

/** Everything a JSON:API request's query string says. */
export interface JsonApiQuery {
  /** The whole parsed query, for links that keep every parameter (see buildQueryString). */
  params: QueryObject;
  /** The filter tree; an empty root group when there is no filter. */
  filter: FilterGroup;
  /** Sort keys in order; empty when there is no sort. */
  sort: SortField[];
  page: PageRequest;
  /** Include paths split into segments; empty when there is no include. */
  include: string[][];
  /** Sparse fieldsets by resource type. */
  fields: Map<string, Set<string>>;
  /** Custom parameters (names with a character other than a-z), e.g. `resourceVersion`. */
  extra: QueryObject;
  /** The revision asked for with `resourceVersion`, or null for the current one. */
  resourceVersion: ResourceVersion | null;
  /** The moment `as_of` asks computed locations for (Unix seconds), or null for now. */
  asOf: number | null;
}

/**
 * Parse and validate a request's query string (with or without its `?`). Applies Drupal's rule
 * for unknown parameters first: a name made only of a-z that JSON:API does not reserve is a 400,
 * since the spec keeps such names for itself; any other name is a custom parameter, kept in `extra`.
 */
export function parseJsonApiQuery(raw: string): JsonApiQuery {
  const params = parseQueryString(raw);
  const extra = Object.create(null) as QueryObject;
  const violations: string[] = [];
  for (const [name, value] of Object.entries(params)) {
    if (RESERVED_PARAMETERS.includes(name)) continue;
    if (/^[a-z]+$/.test(name)) violations.push(name);
    else extra[name] = value;
  }
  if (violations.length > 0) {
    throw badParameter(
      violations[0]!,
      `The following query parameters violate the JSON:API spec: '${violations.join("', '")}'.`,
    );
  }
  return {
    params,
    filter: parseFilter(params.filter),
    sort: parseSort(params.sort),
    page: parsePage(params.page),
    include: parseInclude(params.include),
    fields: parseFields(params.fields),
    extra,
    resourceVersion: parseResourceVersion(extra[RESOURCE_VERSION_PARAMETER]),
    asOf: parseAsOf(extra.as_of),
  };
}
