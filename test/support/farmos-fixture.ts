/**
 * A small farmOS 3.x, recorded: plain node:http answering as farmOS does (farmos-behaviour.md):
 * `+00:00` timestamps, `drupal_internal__*` numbers, offset paging links with no `meta.count`,
 * keyset filters on those numbers, private files under `/system/files/…` (a token needed), an
 * anonymous user with no name, role identifiers of its own, a contributed module's bundle
 * (`plan--crop`) and field, and a token endpoint without the password grant (the optional
 * simple_oauth_password_grant module is not enabled). It also misbehaves on cue: a 500, an HTML
 * page and a truncated body once each (retried), a collection that always fails, a file whose bytes
 * are not its stated size, a log related to an asset that does not exist.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const FIXTURE_TOKEN = 'fixture-access-token';
export const FIXTURE_CLIENT = { id: 'importer', secret: 'importer-secret' };

const U = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
export const FIXTURE = {
  anonymous: U(100),
  admin: U(101),
  farmer: U(102),
  tomato: U(200),
  field: U(300),
  mapFile: U(400),
  badFile: U(401),
  walk: U(500),
  dangling: U(501),
  ownerless: U(502),
  missingAsset: U(999),
  plan: U(600),
};
export const MAP_BYTES = 'A hand-drawn map of the home field.\n'.repeat(20);

const t = (s: string) => `${s}+00:00`;
const rel = (type: string, id: string, meta: Record<string, unknown> = {}) => ({
  type,
  id,
  meta: { drupal_internal__target_id: 1, ...meta },
});

function records(
  base: string,
): Record<
  string,
  Array<{ type: string; id: string; attributes: Record<string, unknown>; relationships: Record<string, unknown> }>
> {
  const user = (id: string, uid: number, name: string, extra: Record<string, unknown> = {}, roles: string[] = []) => ({
    type: 'user--user',
    id,
    attributes: {
      drupal_internal__uid: uid,
      langcode: 'en',
      preferred_langcode: 'en',
      name,
      mail: name ? `${name}@example.org` : null,
      timezone: 'UTC',
      status: uid !== 0,
      created: t('2021-05-01T12:00:00'),
      changed: t('2021-05-02T12:00:00'),
      access: 0,
      login: 0,
      init: null,
      default_langcode: true,
      display_name: name || 'Anonymous',
      ...extra,
    },
    relationships: {
      roles: {
        data: roles.map((r, i) => ({
          type: 'user_role--user_role',
          id: U(700 + i),
          meta: { drupal_internal__target_id: r },
        })),
      },
    },
  });
  return {
    'user--user': [
      user(FIXTURE.anonymous, 0, ''),
      user(FIXTURE.admin, 1, 'admin', {}, ['farm_manager']),
      user(FIXTURE.farmer, 2, 'farmer', {}, ['farm_manager']),
    ],
    'taxonomy_term--plant_type': [
      {
        type: 'taxonomy_term--plant_type',
        id: FIXTURE.tomato,
        attributes: {
          drupal_internal__tid: 1,
          drupal_internal__revision_id: 1,
          langcode: 'en',
          revision_created: t('2021-05-03T00:00:00'),
          revision_log_message: null,
          status: true,
          name: 'Tomato',
          description: { value: 'Nightshade', format: 'default', processed: '<p>Nightshade</p>' },
          weight: 0,
          changed: t('2021-05-03T00:00:00'),
          default_langcode: true,
          revision_translation_affected: true,
        },
        relationships: {
          vid: { data: { type: 'taxonomy_vocabulary--taxonomy_vocabulary', id: U(800) } },
          revision_user: { data: null },
          parent: {
            data: [
              {
                type: 'taxonomy_term--plant_type',
                id: 'virtual',
                meta: {
                  links: { help: { href: 'https://www.drupal.org/docs/8/modules/json-api/core-concepts#virtual' } },
                },
              },
            ],
          },
        },
      },
    ],
    'asset--land': [
      {
        type: 'asset--land',
        id: FIXTURE.field,
        attributes: {
          drupal_internal__id: 1,
          drupal_internal__revision_id: 3,
          langcode: 'en',
          revision_created: t('2021-06-01T00:00:00'),
          revision_log_message: null,
          name: 'Home field',
          status: 'active',
          archived: null,
          created: t('2021-06-01T00:00:00'),
          changed: t('2021-06-05T08:30:00'),
          default_langcode: true,
          revision_translation_affected: true,
          data: null,
          notes: { value: 'Good soil', format: 'default', processed: '<p>Good soil</p>' },
          flag: ['priority'],
          id_tag: [],
          geometry: null,
          intrinsic_geometry: null,
          is_location: true,
          is_fixed: false,
          land_type: 'field',
          surveyed_by: 'County office',
        },
        relationships: {
          asset_type: { data: { type: 'asset_type--asset_type', id: U(801) } },
          revision_user: { data: rel('user--user', FIXTURE.farmer) },
          uid: { data: rel('user--user', FIXTURE.farmer) },
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
        id: FIXTURE.mapFile,
        attributes: {
          drupal_internal__fid: 1,
          langcode: 'en',
          filename: 'map.txt',
          uri: { value: 'private://2021-06/map.txt', url: '/system/files/2021-06/map.txt' },
          filemime: 'text/plain',
          filesize: Buffer.byteLength(MAP_BYTES),
          status: true,
          created: t('2021-06-02T09:00:00'),
          changed: t('2021-06-02T09:00:00'),
        },
        relationships: { uid: { data: rel('user--user', FIXTURE.farmer) } },
      },
      {
        type: 'file--file',
        id: FIXTURE.badFile,
        attributes: {
          drupal_internal__fid: 2,
          langcode: 'en',
          filename: 'bad.txt',
          uri: { value: 'private://2021-06/bad.txt', url: `${base}/system/files/2021-06/bad.txt` },
          filemime: 'text/plain',
          filesize: 999,
          status: true,
          created: t('2021-06-02T09:00:00'),
          changed: t('2021-06-02T09:00:00'),
        },
        relationships: { uid: { data: rel('user--user', FIXTURE.farmer) } },
      },
    ],
    'log--activity': [
      {
        type: 'log--activity',
        id: FIXTURE.walk,
        attributes: {
          drupal_internal__id: 1,
          drupal_internal__revision_id: 1,
          langcode: 'en',
          revision_created: t('2021-06-02T10:00:00'),
          revision_log_message: null,
          name: 'Walked the field',
          timestamp: t('2021-06-02T10:00:00'),
          status: 'done',
          created: t('2021-06-02T10:00:00'),
          changed: t('2021-06-02T10:05:00'),
          default_langcode: true,
          revision_translation_affected: true,
          data: null,
          flag: [],
          notes: null,
          geometry: null,
          is_movement: false,
          is_group_assignment: false,
        },
        relationships: {
          log_type: { data: { type: 'log_type--log_type', id: U(802) } },
          revision_user: { data: rel('user--user', FIXTURE.farmer) },
          uid: { data: rel('user--user', FIXTURE.farmer) },
          asset: { data: [rel('asset--land', FIXTURE.field)] },
          category: { data: [] },
          file: { data: [rel('file--file', FIXTURE.mapFile, { description: 'Map', display: true })] },
          image: { data: [] },
          owner: { data: [rel('user--user', FIXTURE.farmer)] },
          quantity: { data: [] },
          location: { data: [] },
          equipment: { data: [] },
          group: { data: [] },
        },
      },
      {
        // Stored as it is: no owner and no author filled in, its blank name kept.
        type: 'log--activity',
        id: FIXTURE.ownerless,
        attributes: {
          drupal_internal__id: 3,
          drupal_internal__revision_id: 3,
          langcode: 'en',
          name: '',
          timestamp: t('2021-06-04T10:00:00'),
          status: 'pending',
          created: t('2021-06-04T10:00:00'),
          changed: t('2021-06-04T10:00:00'),
        },
        relationships: { uid: { data: null }, owner: { data: [] }, asset: { data: [] } },
      },
      {
        type: 'log--activity',
        id: FIXTURE.dangling,
        attributes: {
          drupal_internal__id: 2,
          drupal_internal__revision_id: 2,
          langcode: 'en',
          name: 'About a deleted asset',
          timestamp: t('2021-06-03T10:00:00'),
          status: 'done',
          created: t('2021-06-03T10:00:00'),
          changed: t('2021-06-03T10:00:00'),
        },
        relationships: {
          uid: { data: rel('user--user', FIXTURE.farmer) },
          asset: { data: [rel('asset--land', FIXTURE.missingAsset)] },
        },
      },
    ],
    'plan--crop': [
      {
        type: 'plan--crop',
        id: FIXTURE.plan,
        attributes: { drupal_internal__id: 1, name: '2021 season' },
        relationships: {},
      },
    ],
    'log--observation': [],
  };
}

const INTERNAL: Record<string, string> = {
  user: 'drupal_internal__uid',
  taxonomy_term: 'drupal_internal__tid',
  file: 'drupal_internal__fid',
};

export interface FarmosFixture {
  url: string;
  close(): Promise<void>;
  /** Requests seen, as "METHOD path". */
  requests: string[];
  /** The same, with their query strings. */
  queries: string[];
  /** Change a record's attributes at the source (its `changed` too, as farmOS would). */
  edit(uuid: string, attributes: Record<string, unknown>): void;
}

export interface FixtureOptions {
  /**
   * A data stream (`data_stream--basic`, farmOS 3.x's) with these readings, served newest first
   * by its data endpoint; `hold`, when given, is called as each request for them arrives, and the
   * answer waits for the promise it returns (a slow or stalled source).
   */
  readings?: { values: Array<[number, number]>; hold?: () => Promise<void> | undefined };
}

export const FIXTURE_STREAM = U(650);

export async function startFarmosFixture(options: FixtureOptions = {}): Promise<FarmosFixture> {
  const requests: string[] = [];
  const queries: string[] = [];
  const edits = new Map<string, Record<string, unknown>>();
  const once = new Set<string>();
  /** The first request for these paths misbehaves: the importer must retry. */
  const glitches: Record<string, (res: ServerResponse) => void> = {
    '/api/log/activity': (res) => send(res, 500, { errors: [{ status: '500', title: 'Internal Server Error' }] }),
    '/api/asset/land': (res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!DOCTYPE html><html><body>Maintenance</body></html>');
    },
    '/api/taxonomy_term/plant_type': (res) => {
      res.writeHead(200, { 'Content-Type': 'application/vnd.api+json' });
      res.end('{"data": [{"type": "taxonomy_term--plant_type", "id"');
    },
  };
  let base = '';
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', base);
    requests.push(`${req.method} ${url.pathname}`);
    queries.push(`${req.method} ${url.pathname}${url.search}`);
    if (url.pathname === '/oauth/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        if (
          form.get('grant_type') === 'client_credentials' &&
          form.get('client_id') === FIXTURE_CLIENT.id &&
          form.get('client_secret') === FIXTURE_CLIENT.secret
        ) {
          return send(res, 200, { token_type: 'Bearer', expires_in: 3600, access_token: FIXTURE_TOKEN });
        }
        if (form.get('grant_type') === 'password') {
          return send(res, 400, {
            error: 'unsupported_grant_type',
            error_description: 'The authorization grant type is not supported by the authorization server.',
            hint: 'Check that all required parameters have been provided',
            message: 'The authorization grant type is not supported by the authorization server.',
          });
        }
        return send(res, 401, {
          error: 'invalid_client',
          error_description: 'Client authentication failed',
          message: 'Client authentication failed',
        });
      });
      return;
    }
    if (req.headers.authorization !== `Bearer ${FIXTURE_TOKEN}`)
      return send(res, 403, {
        errors: [
          { status: '403', title: 'Forbidden', detail: 'The current user is not permitted to view this resource.' },
        ],
      });
    if (url.pathname.startsWith('/system/files/')) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      return res.end(url.pathname.endsWith('/map.txt') ? MAP_BYTES : 'short');
    }
    const data = records(base);
    if (options.readings) {
      const stream = FIXTURE_STREAM;
      if (url.pathname === `/api/data_stream/${stream}/data`) {
        const answer = () => {
          const rows = [...options.readings!.values]
            .sort((a, b) => b[0] - a[0])
            .map(([timestamp, value]) => ({ timestamp, temperature: String(value) }));
          const offset = Number(url.searchParams.get('offset') ?? 0);
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify(rows.slice(offset, offset + Number(url.searchParams.get('limit') ?? 100))));
        };
        const held = options.readings.hold?.();
        if (held) void held.then(answer);
        else answer();
        return;
      }
      data['data_stream--basic'] = [
        {
          type: 'data_stream--basic',
          id: stream,
          attributes: {
            drupal_internal__id: 1,
            langcode: 'en',
            name: 'temperature',
            private_key: 'fixture-private-key',
            public: false,
            created: t('2021-06-01T00:00:00'),
            changed: t('2021-06-01T00:00:00'),
            default_langcode: true,
          },
          relationships: { uid: { data: rel('user--user', FIXTURE.farmer) } },
        },
      ];
    }
    for (const list of Object.values(data)) for (const r of list) Object.assign(r.attributes, edits.get(r.id) ?? {});
    if (url.pathname === '/api') {
      const links: Record<string, { href: string }> = { self: { href: `${base}/api` } };
      for (const type of [
        ...Object.keys(data),
        'asset_type--asset_type',
        'user_role--user_role',
        'taxonomy_vocabulary--taxonomy_vocabulary',
      ])
        links[type] = { href: `${base}/api/${type.replace('--', '/')}` };
      return send(res, 200, {
        jsonapi: { version: '1.0' },
        data: [],
        meta: {
          farm: { name: 'Fixture farm', url: base, version: '3.2.0' },
          links: { me: { meta: { id: FIXTURE.admin } } },
        },
        links,
      });
    }
    const m = /^\/api\/([a-z_]+)\/([a-z_]+)$/.exec(url.pathname);
    if (!m) return send(res, 404, { errors: [{ status: '404', title: 'Not Found' }] });
    if (glitches[url.pathname] && !once.has(url.pathname)) {
      once.add(url.pathname);
      return glitches[url.pathname]!(res);
    }
    if (url.pathname === '/api/log/observation')
      return send(res, 500, {
        errors: [
          { status: '500', title: 'Internal Server Error', detail: 'The website encountered an unexpected error.' },
        ],
      });
    const type = `${m[1]}--${m[2]}`;
    const key = INTERNAL[m[1]!] ?? 'drupal_internal__id';
    const descending = url.searchParams.get('sort') === `-${key}`;
    let list = [...(data[type] ?? [])].sort(
      (a, b) => (descending ? -1 : 1) * (Number(a.attributes[key]) - Number(b.attributes[key])),
    );
    const upto = url.searchParams.get('filter[upto][condition][value]');
    if (upto !== null) list = list.filter((r) => Number(r.attributes[key]) <= Number(upto));
    const after = url.searchParams.get('filter[after][condition][value]');
    if (after !== null) list = list.filter((r) => Number(r.attributes[key]) > Number(after));
    // farmOS compares a timestamp filter's value (seconds) with the stored number.
    const since = url.searchParams.get('filter[since][condition][value]');
    if (since !== null)
      list = list.filter(
        (r) => typeof r.attributes.changed !== 'string' || Date.parse(r.attributes.changed) / 1000 >= Number(since),
      );
    const limit = Math.min(50, Number(url.searchParams.get('page[limit]') ?? 50));
    const offset = Number(url.searchParams.get('page[offset]') ?? 0);
    const page = list.slice(offset, offset + limit);
    const links: Record<string, unknown> = { self: { href: url.toString() } };
    if (offset + limit < list.length)
      links.next = { href: `${base}${url.pathname}?page[offset]=${offset + limit}&page[limit]=${limit}` };
    // No meta.count: farmOS leaves it out unless asked for.
    return send(res, 200, { jsonapi: { version: '1.0' }, data: page, links });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const edit = (uuid: string, attributes: Record<string, unknown>) =>
    edits.set(uuid, { ...edits.get(uuid), ...attributes });
  return { url: base, requests, queries, edit, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, {
    'Content-Type': status < 300 && !('error' in (body as object)) ? 'application/vnd.api+json' : 'application/json',
  });
  res.end(JSON.stringify(body));
}
