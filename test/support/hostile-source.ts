/**
 * A source farm that attacks the importer (issue 37): plain node:http on loopback, serving a
 * small, valid farmOS-shaped farm (`/api` with its links, `/oauth/token`, collections paged by the
 * `drupal_internal__*` keyset filters source.ts sends, private file bytes), until a behaviour is
 * switched on in `behave`. Its farm is the plain object `farm` (records by resource type) and
 * `files` (bytes by path): a test edits them to serve what it needs (a name with escape
 * sequences, a file with no filesize…). A second loopback server, `internal`, stands in for an
 * address on the operator's network that the source points the importer at: it records every
 * request it gets, and a test asserts that none came.
 *
 * To add a behaviour: a field in `HostileBehaviour`, and the few lines in `answer` that act on it.
 * Every endless answer is bounded (ENDLESS_CAP_BYTES, a request count) so a test that fails
 * cannot run the machine out of memory.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const HOSTILE_CLIENT = { id: 'importer', secret: 'importer-secret' };
export const HOSTILE_TOKEN = 'hostile-access-token';

const U = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
export const HOSTILE = { grower: U(102), field: U(300), map: U(400), walk: U(500) };
export const MAP_BYTES = 'A map of the field.\n'.repeat(10);

/** An endless answer stops here whatever the importer does: a failing test ends, the machine stays up. */
const ENDLESS_CAP_BYTES = 256 * 1024 * 1024;

export interface SourceRecord {
  type: string;
  id: string;
  attributes: Record<string, unknown>;
  relationships: Record<string, unknown>;
}

export interface HostileBehaviour {
  /** A collection path (`/api/asset/land`) answered with a JSON document that never ends. */
  endlessPage?: string;
  /** Revision histories whose `links.next` is the page itself, forever. */
  selfNextHistory?: boolean;
  /** Revision histories of endless distinct pages (a new `links.next` each time), 50 revisions each. */
  endlessHistory?: boolean;
  /** Bytes under /system/files/ answered with a redirect to this URL (the `internal` server's, or a path of `files`). */
  redirectFilesTo?: string;
  /** `/oauth/token` answered with a 307 to this URL. */
  redirectTokenTo?: string;
  /** A collection path answered with its headers and the start of a body, then nothing. */
  stallBody?: string;
  /** A collection path answered 500 with this error detail. */
  failWith?: { path: string; detail: string };
}

export interface HostileSource {
  url: string;
  /** What it serves: edit before (or between) runs. */
  farm: Record<string, SourceRecord[]>;
  files: Record<string, string>;
  behave: HostileBehaviour;
  /** Requests seen, as "METHOD path?query". */
  requests: string[];
  /** Bytes written into endless answers so far. */
  endlessBytes: number;
  /** The stand-in for an internal address: its URL and the requests it got. */
  internal: { url: string; requests: string[] };
  close(): Promise<void>;
}

const t = (s: string) => `${s}+00:00`;
const rel = (type: string, id: string) => ({ type, id, meta: { drupal_internal__target_id: 1 } });

/** The farm it serves when nothing is edited: a user, a field, a file and a log about them. */
export function hostileFarm(): Record<string, SourceRecord[]> {
  return {
    'user--user': [
      {
        type: 'user--user',
        id: HOSTILE.grower,
        attributes: {
          drupal_internal__uid: 2,
          name: 'grower',
          mail: 'grower@example.org',
          timezone: 'UTC',
          status: true,
          created: t('2021-05-01T12:00:00'),
          changed: t('2021-05-02T12:00:00'),
        },
        relationships: { roles: { data: [] } },
      },
    ],
    'asset--land': [
      {
        type: 'asset--land',
        id: HOSTILE.field,
        attributes: {
          drupal_internal__id: 1,
          drupal_internal__revision_id: 3,
          name: 'Home field',
          status: 'active',
          created: t('2021-06-01T00:00:00'),
          changed: t('2021-06-05T08:30:00'),
          notes: null,
          flag: [],
          is_location: true,
          is_fixed: false,
          land_type: 'field',
        },
        relationships: {
          uid: { data: rel('user--user', HOSTILE.grower) },
          owner: { data: [] },
          parent: { data: [] },
          location: { data: [] },
          file: { data: [] },
          image: { data: [] },
        },
      },
    ],
    'file--file': [
      {
        type: 'file--file',
        id: HOSTILE.map,
        attributes: {
          drupal_internal__fid: 1,
          filename: 'map.txt',
          uri: { value: 'private://2021-06/map.txt', url: '/system/files/2021-06/map.txt' },
          filemime: 'text/plain',
          filesize: Buffer.byteLength(MAP_BYTES),
          status: true,
          created: t('2021-06-02T09:00:00'),
          changed: t('2021-06-02T09:00:00'),
        },
        relationships: { uid: { data: rel('user--user', HOSTILE.grower) } },
      },
    ],
    'log--activity': [
      {
        type: 'log--activity',
        id: HOSTILE.walk,
        attributes: {
          drupal_internal__id: 1,
          drupal_internal__revision_id: 1,
          name: 'Walked the field',
          timestamp: t('2021-06-02T10:00:00'),
          status: 'done',
          created: t('2021-06-02T10:00:00'),
          changed: t('2021-06-02T10:05:00'),
        },
        relationships: {
          uid: { data: rel('user--user', HOSTILE.grower) },
          asset: { data: [rel('asset--land', HOSTILE.field)] },
          owner: { data: [] },
          quantity: { data: [] },
          file: { data: [] },
        },
      },
    ],
  };
}

const INTERNAL_ID: Record<string, string> = {
  user: 'drupal_internal__uid',
  taxonomy_term: 'drupal_internal__tid',
  file: 'drupal_internal__fid',
};

export async function startHostileSource(behave: HostileBehaviour = {}): Promise<HostileSource> {
  const internalRequests: string[] = [];
  const internal = await listen((req, res) => {
    internalRequests.push(`${req.method} ${req.url}`);
    // What an internal service would answer: a secret, and (at /oauth/token) a token.
    send(res, 200, { access_token: 'internal-token', token_type: 'Bearer', secret: 'internal metadata' });
  });
  const source: HostileSource = {
    url: '',
    farm: hostileFarm(),
    files: { '/system/files/2021-06/map.txt': MAP_BYTES },
    behave,
    requests: [],
    endlessBytes: 0,
    internal: { url: internal.url, requests: internalRequests },
    close: async () => {
      await internal.close();
      await server.close();
    },
  };
  const server = await listen((req, res) => answer(source, req, res));
  source.url = server.url;
  return source;
}

function answer(source: HostileSource, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', source.url);
  const behave = source.behave;
  source.requests.push(`${req.method} ${url.pathname}${url.search}`);
  if (url.pathname === '/oauth/token' && req.method === 'POST') {
    if (behave.redirectTokenTo) {
      res.writeHead(307, { Location: behave.redirectTokenTo });
      return void res.end();
    }
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      if (form.get('client_id') === HOSTILE_CLIENT.id && form.get('client_secret') === HOSTILE_CLIENT.secret)
        return send(res, 200, { token_type: 'Bearer', expires_in: 3600, access_token: HOSTILE_TOKEN });
      send(res, 401, { error: 'invalid_client', error_description: 'Client authentication failed' });
    });
    return;
  }
  if (req.headers.authorization !== `Bearer ${HOSTILE_TOKEN}`)
    return send(res, 401, { errors: [{ status: '401', title: 'Unauthorized' }] });
  if (url.pathname.startsWith('/system/files/') || url.pathname in source.files) {
    if (behave.redirectFilesTo && url.pathname.startsWith('/system/files/')) {
      res.writeHead(302, { Location: behave.redirectFilesTo });
      return void res.end();
    }
    const bytes = source.files[url.pathname];
    if (bytes === undefined) return send(res, 404, { errors: [{ status: '404' }] });
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    return void res.end(bytes);
  }
  if (url.pathname === '/api') {
    const links: Record<string, { href: string }> = { self: { href: `${source.url}/api` } };
    for (const type of [...Object.keys(source.farm), 'asset_type--asset_type', 'user_role--user_role'])
      links[type] = { href: `${source.url}/api/${type.replace('--', '/')}` };
    return send(res, 200, {
      jsonapi: { version: '1.0' },
      data: [],
      meta: { farm: { name: 'Hostile farm', url: source.url, version: '3.2.0' } },
      links,
    });
  }
  const history = /^\/api\/([a-z_]+)\/([a-z_]+)\/([0-9a-f-]{36})\/revision-history$/.exec(url.pathname);
  if (history) return revisionHistory(source, url, `${history[1]}--${history[2]}`, history[3]!, res);
  const m = /^\/api\/([a-z_]+)\/([a-z_]+)$/.exec(url.pathname);
  if (!m) return send(res, 404, { errors: [{ status: '404', title: 'Not Found' }] });
  if (behave.endlessPage === url.pathname) return endless(source, res);
  if (behave.stallBody === url.pathname) {
    res.writeHead(200, { 'Content-Type': 'application/vnd.api+json' });
    return void res.write('{"data": [');
  }
  if (behave.failWith?.path === url.pathname)
    return send(res, 500, {
      errors: [{ status: '500', title: 'Internal Server Error', detail: behave.failWith.detail }],
    });
  collection(source, url, `${m[1]}--${m[2]}`, INTERNAL_ID[m[1]!] ?? 'drupal_internal__id', res);
}

/** A page of a collection, as farmOS pages: sorted by the own number, keyset filters honoured. */
function collection(source: HostileSource, url: URL, type: string, key: string, res: ServerResponse): void {
  const descending = url.searchParams.get('sort') === `-${key}`;
  let list = [...(source.farm[type] ?? [])].sort(
    (a, b) => (descending ? -1 : 1) * (Number(a.attributes[key]) - Number(b.attributes[key])),
  );
  const upto = url.searchParams.get('filter[upto][condition][value]');
  if (upto !== null) list = list.filter((r) => Number(r.attributes[key]) <= Number(upto));
  const after = url.searchParams.get('filter[after][condition][value]');
  if (after !== null) list = list.filter((r) => Number(r.attributes[key]) > Number(after));
  const since = url.searchParams.get('filter[since][condition][value]');
  if (since !== null)
    list = list.filter(
      (r) => typeof r.attributes.changed !== 'string' || Date.parse(r.attributes.changed) / 1000 >= Number(since),
    );
  const limit = Math.min(50, Number(url.searchParams.get('page[limit]') ?? 50));
  send(res, 200, {
    jsonapi: { version: '1.0' },
    data: list.slice(0, limit),
    links: { self: { href: url.toString() } },
  });
}

/** A record's past revisions: farmOS serves none (404), unless a behaviour says otherwise. */
function revisionHistory(source: HostileSource, url: URL, type: string, uuid: string, res: ServerResponse): void {
  const record = source.farm[type]?.find((r) => r.id === uuid);
  if (!record || !(source.behave.selfNextHistory || source.behave.endlessHistory))
    return send(res, 404, { errors: [{ status: '404', title: 'Not Found' }] });
  const page = Number(url.searchParams.get('page[offset]') ?? 0);
  const revision = (n: number) => ({
    type,
    id: uuid,
    attributes: { ...record.attributes, drupal_internal__revision_id: 1000 + n, name: `Revision ${n}` },
    relationships: record.relationships,
  });
  const next = source.behave.selfNextHistory
    ? url.toString()
    : `${source.url}${url.pathname}?page[limit]=50&page[offset]=${page + 50}`;
  // Bounded: a test that fails ends its run here, not the machine.
  if (source.requests.length > 50_000) return send(res, 404, { errors: [{ status: '404' }] });
  send(res, 200, {
    data: Array.from({ length: 50 }, (_, i) => revision(page + i)),
    links: { self: { href: url.toString() }, next: { href: next } },
  });
}

/** A document that never ends (until ENDLESS_CAP_BYTES, or the importer hangs up): records, forever. */
function endless(source: HostileSource, res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/vnd.api+json' });
  res.write('{"data": [');
  const chunk =
    `${JSON.stringify({ type: 'asset--land', id: HOSTILE.field, attributes: { name: 'x'.repeat(1000) } })},`.repeat(64);
  const more = () => {
    while (!res.destroyed && source.endlessBytes < ENDLESS_CAP_BYTES) {
      source.endlessBytes += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    res.end();
  };
  res.on('close', () => res.removeAllListeners('drain'));
  more();
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/vnd.api+json' });
  res.end(JSON.stringify(body));
}

async function listen(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      // Stalled and endless answers hold their connections: closed, or close() would wait for them.
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
