/**
 * Reading a subrequests blueprint (Drupal subrequests 3.x, clients.md §1.7, §2.1, §3): a JSON
 * array of `{requestId, uri, action, body?, headers?, waitFor?}`. Everything that can be known
 * before any sub-request is sent is checked here, and a mistake fails the whole request with a
 * 400 naming the blueprint entry (`source.pointer` `/<index>/<member>`): the shape of each
 * entry, duplicate or unknown request ids, replacement tokens that name an unknown request or use
 * JSONPath beyond what is supported, `waitFor` cycles, and exports (`_format=csv`, or an Accept
 * asking for one), which are unpaged and so have no place in a call held in memory. Then the
 * entries are put in the order they run in.
 */
import { ApiError, badRequest } from '../../errors.ts';
import { JsonPathSyntaxError, parseJsonPath, type Segment } from './jsonpath.ts';
import { parseQueryString } from '../query/query-string.ts';
import { exportFormatOfAccept } from '../export.ts';

/** Most entries one blueprint may hold. */
export const MAX_BLUEPRINT_ENTRIES = 50;

export const ACTION_METHODS = {
  view: 'GET',
  create: 'POST',
  update: 'PATCH',
  replace: 'PUT',
  delete: 'DELETE',
  exists: 'HEAD',
} as const;
export type Action = keyof typeof ACTION_METHODS;

/** One `{{<requestId>.body@<JSONPath>}}` replacement token. */
export interface Token {
  /** The token exactly as written, braces included; every occurrence is replaced. */
  raw: string;
  requestId: string;
  path: Segment[];
}

export interface Subrequest {
  /** Position in the blueprint array, for error pointers. */
  index: number;
  requestId: string;
  action: Action;
  method: (typeof ACTION_METHODS)[Action];
  /** As written, tokens included. */
  uri: string;
  /** The request body as a string, tokens included; undefined when there is none. */
  body: string | undefined;
  /** Header name (as written) to value. */
  headers: Array<[string, string]>;
  waitFor: string[];
  uriTokens: Token[];
  bodyTokens: Token[];
  /** `waitFor` plus every request a token reads from: all must have finished first. */
  dependsOn: string[];
}

/**
 * Headers a blueprint may not set: connection management belongs to the loopback client, the
 * credentials are always the parent request's own, and forwarding headers would let a caller
 * pretend to come from another address.
 */
const RESERVED_HEADERS = new Set([
  'authorization',
  'cookie',
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-real-ip',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Characters a request id may not contain: `#` starts the `#body{n}`/`#uri{n}` suffix of
 * expanded copies (farmOS.js splits Content-Ids on it), braces would break replacement tokens,
 * and whitespace is not part of a Content-Id.
 */
const REQUEST_ID_FORBIDDEN = /[#{}\s]/;

const TOKEN = /\{\{([^{}]*)\}\}/g;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Why an export is refused inside a subrequest (after the entry's name and what asked for it). */
export const NO_EXPORTS =
  'An export is the whole collection, unpaged, and a subrequests call holds every response in memory, so exports are not sent inside subrequests: ask for it on its own (GET /api/…?_format=csv), or page through the JSON:API collection.';

/**
 * The `_format` a uri's query string asks for when it is anything but JSON:API (`json`,
 * `api_json`): csv, geojson, kml, a list, or a replacement token, all refused. Read as the server
 * reads it (PHP's rules: `%5Fformat`, the last duplicate wins), so no spelling slips past; null
 * when there is none, or when the query string is one the server refuses anyway.
 */
export function exportParameter(uri: string): string | null {
  const start = uri.indexOf('?');
  if (start < 0) return null;
  const end = uri.indexOf('#', start);
  let format: unknown;
  try {
    format = parseQueryString(uri.slice(start + 1, end < 0 ? undefined : end))._format;
  } catch {
    return null;
  }
  if (format === undefined || format === 'json' || format === 'api_json') return null;
  return typeof format === 'string' ? format : JSON.stringify(format);
}

/** Parse and check a blueprint; returns its entries in the order they are to run. */
export function readBlueprint(input: unknown): Subrequest[] {
  if (input === undefined) {
    throw badRequest(
      'The request body must be a JSON array of subrequests sent as application/json or application/vnd.api+json.',
      { pointer: '' },
    );
  }
  if (!Array.isArray(input)) throw badRequest('The blueprint must be a JSON array of subrequests.', { pointer: '' });
  if (input.length === 0) throw badRequest('The blueprint is empty: send at least one subrequest.', { pointer: '' });
  if (input.length > MAX_BLUEPRINT_ENTRIES) {
    throw badRequest(
      `The blueprint has ${input.length} subrequests; at most ${MAX_BLUEPRINT_ENTRIES} are allowed in one call.`,
      { pointer: '' },
    );
  }

  const entries = input.map((raw, index) => readEntry(raw, index));
  const byId = new Map<string, Subrequest>();
  for (const entry of entries) {
    const clash = byId.get(entry.requestId);
    if (clash) {
      throw badRequest(
        `The requestId "${entry.requestId}" is used by subrequests ${clash.index} and ${entry.index}; each must be unique.`,
        {
          pointer: `/${entry.index}/requestId`,
        },
      );
    }
    byId.set(entry.requestId, entry);
  }
  // Longest first, so that a token naming `a.b` is not read as one naming `a`.
  const ids = [...byId.keys()].sort((a, b) => b.length - a.length);
  for (const entry of entries) {
    entry.waitFor.forEach((id, i) => {
      if (!byId.has(id)) {
        throw badRequest(
          `The subrequest "${entry.requestId}" waits for "${id}", which is not a requestId in this blueprint.`,
          {
            pointer: `/${entry.index}/waitFor/${i}`,
          },
        );
      }
      if (id === entry.requestId) {
        throw badRequest(`The subrequest "${entry.requestId}" waits for itself.`, {
          pointer: `/${entry.index}/waitFor/${i}`,
        });
      }
    });
    entry.uriTokens = findTokens(entry.uri, ids, entry, 'uri');
    entry.bodyTokens = entry.body === undefined ? [] : findTokens(entry.body, ids, entry, 'body');
    const deps = new Set(entry.waitFor);
    for (const token of [...entry.uriTokens, ...entry.bodyTokens]) {
      if (token.requestId === entry.requestId) {
        throw badRequest(
          `The subrequest "${entry.requestId}" has a replacement token ${token.raw} that reads its own response.`,
          {
            pointer: `/${entry.index}/${entry.uriTokens.includes(token) ? 'uri' : 'body'}`,
          },
        );
      }
      deps.add(token.requestId);
    }
    entry.dependsOn = [...deps];
  }
  return executionOrder(entries, byId);
}

function readEntry(raw: unknown, index: number): Subrequest {
  const at = (member: string) => ({ pointer: `/${index}${member ? `/${member}` : ''}` });
  if (!isPlainObject(raw))
    throw badRequest(`Subrequest ${index} must be an object with requestId, uri and action.`, at(''));

  const { requestId, uri, action, body, headers, waitFor } = raw;
  if (typeof requestId !== 'string' || requestId === '') {
    throw badRequest(`Subrequest ${index} needs a requestId: a non-empty string.`, at('requestId'));
  }
  if (REQUEST_ID_FORBIDDEN.test(requestId)) {
    throw badRequest(`The requestId "${requestId}" may not contain "#", "{", "}" or whitespace.`, at('requestId'));
  }
  const name = `The subrequest "${requestId}"`;
  if (typeof uri !== 'string' || uri === '') throw badRequest(`${name} needs a uri: a non-empty string.`, at('uri'));
  if (typeof action !== 'string' || action === '') {
    throw badRequest(`${name} needs an action: one of ${Object.keys(ACTION_METHODS).join(', ')}.`, at('action'));
  }
  if (!Object.prototype.hasOwnProperty.call(ACTION_METHODS, action)) {
    throw badRequest(
      `${name} has the unknown action "${action}"; use one of ${Object.keys(ACTION_METHODS).join(', ')}.`,
      at('action'),
    );
  }

  // The body is a JSON document serialized as a string (what both client libraries send). An
  // object or array is accepted too, and serialized here.
  let bodyText: string | undefined;
  if (typeof body === 'string') bodyText = body;
  else if (isPlainObject(body) || Array.isArray(body)) bodyText = JSON.stringify(body);
  else if (body !== undefined && body !== null)
    throw badRequest(`${name} has a body that is not a string: send the JSON document as a string.`, at('body'));

  const format = exportParameter(uri);
  if (format !== null) throw badRequest(`${name} asks for an export (_format=${format}). ${NO_EXPORTS}`, at('uri'));

  const headerList: Array<[string, string]> = [];
  if (headers !== undefined && headers !== null) {
    if (!isPlainObject(headers))
      throw badRequest(`${name} has headers that are not an object of header names to values.`, at('headers'));
    for (const [key, value] of Object.entries(headers)) {
      const pointer = at(`headers/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
      if (!HEADER_NAME.test(key)) throw badRequest(`${name} has a header with the invalid name "${key}".`, pointer);
      if (RESERVED_HEADERS.has(key.toLowerCase())) {
        throw badRequest(
          `${name} sets the header ${key}, which a subrequest may not set (it is sent with the parent request's credentials).`,
          pointer,
        );
      }
      const values = Array.isArray(value) ? value : [value];
      if (!values.every((v) => typeof v === 'string' || typeof v === 'number')) {
        throw badRequest(`${name} has a value of the header ${key} that is not a string.`, pointer);
      }
      const joined = values.map(String).join(', ');
      if (!HEADER_VALUE.test(joined))
        throw badRequest(`${name} has a value of the header ${key} with characters a header may not hold.`, pointer);
      if (key.toLowerCase() === 'accept' && exportFormatOfAccept(joined) !== null) {
        throw badRequest(`${name} sends Accept: ${joined}, which asks for an export. ${NO_EXPORTS}`, pointer);
      }
      headerList.push([key, joined]);
    }
  }

  const waitList: string[] = [];
  if (waitFor !== undefined && waitFor !== null) {
    const list = typeof waitFor === 'string' ? [waitFor] : waitFor;
    if (!Array.isArray(list) || !list.every((id) => typeof id === 'string')) {
      throw badRequest(`${name} has a waitFor that is not an array of requestIds.`, at('waitFor'));
    }
    for (const id of list as string[]) if (!waitList.includes(id)) waitList.push(id);
  }

  const method = ACTION_METHODS[action as Action];
  return {
    index,
    requestId,
    action: action as Action,
    method,
    uri,
    body: bodyText,
    headers: headerList,
    waitFor: waitList,
    uriTokens: [],
    bodyTokens: [],
    dependsOn: [],
  };
}

/**
 * The replacement tokens in `subject`. A `{{…}}` that does not contain `.body@` is left as it is
 * (a note may well contain braces); one that does must name a request of this blueprint (request
 * ids themselves contain `.`, `:` and `$`, so the id is matched against the known ids, longest
 * first) and carry a supported JSONPath.
 */
function findTokens(subject: string, ids: string[], entry: Subrequest, member: 'uri' | 'body'): Token[] {
  const tokens: Token[] = [];
  const pointer = { pointer: `/${entry.index}/${member}` };
  for (const match of subject.matchAll(TOKEN)) {
    const raw = match[0];
    const inner = match[1]!;
    if (tokens.some((t) => t.raw === raw)) continue;
    if (!inner.includes('.body@')) {
      if (/\.headers@/.test(inner)) {
        throw badRequest(
          `The subrequest "${entry.requestId}" has the token ${raw} in its ${member}; only body replacements ({{<requestId>.body@<JSONPath>}}) are supported.`,
          pointer,
        );
      }
      continue;
    }
    const id = ids.find((candidate) => inner.startsWith(`${candidate}.body@`));
    if (id === undefined) {
      const named = inner.slice(0, inner.lastIndexOf('.body@'));
      throw badRequest(
        `The subrequest "${entry.requestId}" has the token ${raw} in its ${member}, but "${named}" is not a requestId in this blueprint.`,
        pointer,
      );
    }
    let path: Segment[];
    try {
      path = parseJsonPath(inner.slice(id.length + '.body@'.length));
    } catch (error) {
      if (error instanceof JsonPathSyntaxError) {
        throw badRequest(
          `The subrequest "${entry.requestId}" has the token ${raw} in its ${member}, whose JSONPath is not understood: ${error.message}.`,
          pointer,
        );
      }
      throw error;
    }
    tokens.push({ raw, requestId: id, path });
  }
  return tokens;
}

/**
 * A deterministic order that respects every dependency: repeatedly the first entry, in
 * blueprint order, whose dependencies have all run. When none is ready the rest hold a cycle,
 * which is reported with the ids on it.
 */
function executionOrder(entries: Subrequest[], byId: Map<string, Subrequest>): Subrequest[] {
  const done = new Set<string>();
  const order: Subrequest[] = [];
  const pending = [...entries];
  while (pending.length) {
    const at = pending.findIndex((e) => e.dependsOn.every((id) => done.has(id)));
    if (at < 0) throw cycleError(pending, byId);
    const [next] = pending.splice(at, 1);
    order.push(next!);
    done.add(next!.requestId);
  }
  return order;
}

function cycleError(pending: Subrequest[], byId: Map<string, Subrequest>): ApiError {
  const waiting = new Set(pending.map((e) => e.requestId));
  // Walk from the first stuck entry along stuck dependencies until an id repeats.
  const path: string[] = [];
  let current = pending[0]!;
  while (!path.includes(current.requestId)) {
    path.push(current.requestId);
    const nextId = current.dependsOn.find((id) => waiting.has(id))!;
    current = byId.get(nextId)!;
  }
  const cycle = [...path.slice(path.indexOf(current.requestId)), current.requestId];
  const first = byId.get(cycle[0]!)!;
  return badRequest(
    `The subrequests wait for each other in a cycle: ${cycle.map((id) => `"${id}"`).join(' → ')}. Subrequest "${first.requestId}" can never run.`,
    { pointer: `/${first.index}/waitFor` },
  );
}
