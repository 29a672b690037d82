/**
 * The `page` parameter (Drupal core Query/OffsetPage.php; farmos-behaviour.md §4.6): offset
 * paging with a hard cap of 50 items, which farmOS.js hard-codes as its own maximum.
 */

import { badParameter } from '../../errors.ts';
import { getKey, isContainer } from './values.ts';

/** The largest page; larger requests are clamped to it, as Drupal does. */
export const MAX_PAGE_LIMIT = 50;

/** The longest `page[cursor]` accepted. */
export const MAX_CURSOR_LENGTH = 2000;

/** The page asked for. `cursor` is an opaque keyset hint the server itself put in links.next. */
export interface PageRequest {
  offset: number;
  limit: number;
  cursor?: string;
}

/**
 * Parse the `page` parameter. Absent (`undefined`) gives offset 0, limit 50. Other keys than
 * offset, limit and cursor are ignored, as Drupal ignores them.
 */
export function parsePage(param: unknown): PageRequest {
  if (param === undefined) return { offset: 0, limit: MAX_PAGE_LIMIT };
  if (!isContainer(param)) {
    throw badParameter('page', 'The page parameter needs to be an object, e.g. page[offset]=0&page[limit]=50.');
  }
  const page: PageRequest = { offset: readOffset(getKey(param, 'offset')), limit: readLimit(getKey(param, 'limit')) };
  const cursor = readCursor(getKey(param, 'cursor'));
  if (cursor !== undefined) page.cursor = cursor;
  return page;
}

function readLimit(given: unknown): number {
  if (given === undefined) return MAX_PAGE_LIMIT;
  const limit = wholeNumber(given);
  if (limit === null || limit <= 0) throw badParameter('page[limit]', 'The page size needs to be a positive integer.');
  return Math.min(limit, MAX_PAGE_LIMIT);
}

function readOffset(given: unknown): number {
  if (given === undefined) return 0;
  const offset = wholeNumber(given);
  if (offset === null || !Number.isSafeInteger(offset)) {
    throw badParameter('page[offset]', 'The page offset needs to be a non-negative integer.');
  }
  return offset;
}

function readCursor(given: unknown): string | undefined {
  // An empty cursor carries no position, so it is the same as none.
  if (given === undefined || given === '') return undefined;
  if (typeof given !== 'string' || given.length > MAX_CURSOR_LENGTH) {
    throw badParameter('page[cursor]', `The page cursor must be a string of at most ${MAX_CURSOR_LENGTH} characters.`);
  }
  return given;
}

/** A string of decimal digits as a number (possibly beyond the safe range), else null. */
function wholeNumber(given: unknown): number | null {
  return typeof given === 'string' && /^[0-9]+$/.test(given) ? Number(given) : null;
}
