/**
 * Query-string parsing with PHP's parse_str() semantics. farmOS is PHP, and both client libraries
 * lean on how PHP reads a query string: farmOS.js repeats keys and relies on the last one winning,
 * and puts a literal `=` in operator values (`[operator]=%3E=`); farmOS.py sends `[value][]` lists.
 * qs gets several of these wrong (it splits `a=b]=c` on `]=`, turns duplicates of a list key into a
 * list, and gives up decoding a whole value on one bad escape), so this is written by hand.
 */

import { badParameter } from '../../errors.ts';
import { percentDecode } from './percent-decode.ts';

/** A parsed query value: a string leaf, a list (keys 0..n-1), or a map. */
export type QueryValue = string | QueryValue[] | QueryObject;

/** A parsed map. Always created with a null prototype, so `__proto__` or `constructor` are plain keys. */
export interface QueryObject {
  [key: string]: QueryValue;
}

/** PHP's default max_input_vars. A longer query string is refused rather than truncated. */
export const MAX_PARAMETERS = 1000;

/** The deepest bracket nesting accepted (`filter[id][condition][value][]` is 4). */
export const MAX_DEPTH = 8;

/** A PHP array while it is being built: ordered keys plus the next free list index. */
interface Bag {
  entries: Map<string, Slot>;
  next: number;
}
type Slot = string | Bag;

/** A key split into its top-level name and bracket segments; `null` is an append (`[]`). */
interface ParsedKey {
  name: string;
  segments: Array<string | null>;
}

/**
 * Parse a raw query string (without or with its leading `?`) into nested values, as PHP does:
 * pairs split on `&`, each on its first `=`; `+` is a space; `a[b][c]=v` nests; `a[]=v` appends;
 * the last duplicate wins; maps whose keys are exactly 0..n-1 become arrays in index order.
 * Throws a 400 for more than {@link MAX_PARAMETERS} pairs or nesting deeper than {@link MAX_DEPTH}.
 */
export function parseQueryString(raw: string): QueryObject {
  const query = raw.startsWith('?') ? raw.slice(1) : raw;
  const root: Bag = newBag();
  let count = 0;
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const decodedKey = percentDecode(eq === -1 ? pair : pair.slice(0, eq));
    count += 1;
    if (count > MAX_PARAMETERS) {
      throw badParameter(baseName(decodedKey), `The query string has more than ${MAX_PARAMETERS} parameters.`);
    }
    const key = parseKey(decodedKey);
    // PHP silently drops a pair whose name is empty (`=x`, `[a]=x`).
    if (key === null) continue;
    assign(root, key, eq === -1 ? '' : percentDecode(pair.slice(eq + 1)));
  }
  return toObject(root);
}

/**
 * Split a decoded key the way php_register_variable_ex() does. In the top-level name spaces and
 * dots become `_`; an unterminated first `[` becomes `_` too; text after a `]` that does not open
 * another `[` is ignored; an unterminated later `[` is dropped with everything after it.
 */
function parseKey(decoded: string): ParsedKey | null {
  // PHP works on C strings: a NUL ends the name. Leading spaces are skipped.
  const nul = decoded.indexOf('\0');
  const key = (nul === -1 ? decoded : decoded.slice(0, nul)).replace(/^ +/, '');
  const open = key.indexOf('[');
  let name = (open === -1 ? key : key.slice(0, open)).replace(/[ .]/g, '_');
  if (name === '') return null;
  const segments: Array<string | null> = [];
  if (open === -1) return { name, segments };
  let bracket = open;
  for (;;) {
    if (segments.length >= MAX_DEPTH) {
      throw badParameter(name, `The query parameter '${name}' is nested more than ${MAX_DEPTH} levels deep.`);
    }
    const start = bracket + 1;
    // `a[ ]` is an append like `a[]`: PHP skips one space before looking for `]`.
    const probe = key[start] === ' ' ? start + 1 : start;
    let close: number;
    if (key[probe] === ']') {
      segments.push(null);
      close = probe;
    } else {
      close = key.indexOf(']', probe);
      if (close === -1) {
        if (segments.length === 0) name = `${name}_${key.slice(start).replace(/[ .[]/g, '_')}`;
        break;
      }
      segments.push(key.slice(start, close));
    }
    if (key[close + 1] !== '[') break;
    bracket = close + 1;
  }
  return { name, segments };
}

/** The top-level name of a decoded key, for error messages. */
function baseName(decoded: string): string {
  const open = decoded.indexOf('[');
  return open === -1 ? decoded : decoded.slice(0, open);
}

function newBag(): Bag {
  return { entries: new Map(), next: 0 };
}

function isBag(slot: Slot | undefined): slot is Bag {
  return typeof slot === 'object';
}

/** Store a value at its key path; scalars in the way are replaced by maps, as in PHP. */
function assign(root: Bag, key: ParsedKey, value: string): void {
  let bag = root;
  let slotKey = key.name;
  for (const segment of key.segments) {
    let child = bag.entries.get(slotKey);
    if (!isBag(child)) {
      child = newBag();
      put(bag, slotKey, child);
    }
    bag = child;
    slotKey = segment ?? String(bag.next);
  }
  put(bag, slotKey, value);
}

/** Set a key; like PHP, an existing key keeps its position and an integer key moves `next` on. */
function put(bag: Bag, key: string, slot: Slot): void {
  bag.entries.set(key, slot);
  const index = integerKey(key);
  if (index !== null && index >= bag.next) bag.next = index + 1;
}

/** The integer a key stands for when PHP would store it as one ("7", "-3"; not "07" or "+7"). */
function integerKey(key: string): number | null {
  if (!/^(?:0|-?[1-9][0-9]*)$/.test(key)) return null;
  const n = Number(key);
  return Number.isSafeInteger(n) ? n : null;
}

function toValue(slot: Slot): QueryValue {
  if (!isBag(slot)) return slot;
  return isList(slot) ? toList(slot) : toObject(slot);
}

/**
 * A map is a list when its keys are exactly 0..n-1, in any order. A sparse map (`value[5]=x`)
 * stays a map so its keys survive: filter ids like `filter[5]` are referenced by `memberOf`.
 */
function isList(bag: Bag): boolean {
  const size = bag.entries.size;
  for (const key of bag.entries.keys()) {
    const index = integerKey(key);
    if (index === null || index < 0 || index >= size) return false;
  }
  return size > 0;
}

function toList(bag: Bag): QueryValue[] {
  const list: QueryValue[] = new Array(bag.entries.size);
  for (const [key, slot] of bag.entries) list[Number(key)] = toValue(slot);
  return list;
}

function toObject(bag: Bag): QueryObject {
  const object = Object.create(null) as QueryObject;
  for (const [key, slot] of bag.entries) object[key] = toValue(slot);
  return object;
}
