/**
 * A small farmOS 3.x, recorded (or the same farm as farmOS 4.x serves it: `version: '4.x'`): plain
 * node:http answering as farmOS does (farmos-behaviour.md):
 * `+00:00` timestamps, `drupal_internal__*` numbers, offset paging links with no `meta.count`,
 * keyset filters on those numbers, private files under `/system/files/…` (a token needed), an
 * anonymous user with no name, role identifiers of its own, a contributed module's bundle
 * (`plan--crop`) and field, and a token endpoint without the password grant (the optional
 * simple_oauth_password_grant module is not enabled). It also misbehaves on cue: a 500, an HTML
 * page and a truncated body once each (retried), a collection that always fails, a file whose bytes
 * are not its stated size, a log related to an asset that does not exist (`faults: false` leaves
 * out the last three). farmOS 3.x's own shapes are in it: a material quantity with two material
 * types, a product asset, a plant type with a photo.
 *
 * As farmOS 4.x (its 4.0 release post): assets have no `status`, their `archived` is a boolean
 * and the time is `last_archived`; an animal's `is_castrated` is `is_sterile`; a log may be
 * `abandoned`; a farm organization (`organization--farm`) that an asset names as its `farm`. It
 * can also be a 4.x whose API is off (`farmApi: false`: `/api` and `/oauth/token` are Drupal's
 * HTML 404) or whose OAuth2 keys were never generated (`oauthKeys: false`: simple_oauth's 500).
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
  photo: U(402),
  compost: U(201),
  straw: U(202),
  jam: U(203),
  sheep: U(204),
  preserves: U(301),
  dolly: U(302),
  mulch: U(550),
  // farmOS 4.x only.
  abandoned: U(503),
  farm: U(900),
};
export const MAP_BYTES = 'A hand-drawn map of the home field.\n'.repeat(20);
export const PHOTO_BYTES = 'Not really a JPEG: ripe tomatoes.\n'.repeat(8);

const t = (s: string) => `${s}+00:00`;

type FixtureRecord = {
  type: string;
  id: string;
  attributes: Record<string, unknown>;
  relationships: Record<string, unknown>;
};
/** A taxonomy term as farmOS 3.x serves it. */
const term = (
  vocabulary: string,
  id: string,
  tid: number,
  name: string,
  relationships: Record<string, unknown> = {},
): FixtureRecord => ({
  type: `taxonomy_term--${vocabulary}`,
  id,
  attributes: {
    drupal_internal__tid: tid,
    drupal_internal__revision_id: tid,
    langcode: 'en',
    revision_created: t('2021-05-03T00:00:00'),
    revision_log_message: null,
    status: true,
    name,
    description: null,
    weight: 0,
    changed: t('2021-05-03T00:00:00'),
    default_langcode: true,
    revision_translation_affected: true,
  },
  // A root term's parent, as Drupal serves it: the "virtual" identifier.
  relationships: {
    parent: {
      data: [
        {
          type: `taxonomy_term--${vocabulary}`,
          id: 'virtual',
          meta: { links: { help: { href: 'https://www.drupal.org/docs/8/modules/json-api/core-concepts#virtual' } } },
        },
      ],
    },
    ...relationships,
  },
});
/** An asset as farmOS 3.x serves it. */
const asset = (
  bundle: string,
  id: string,
  n: number,
  name: string,
  attributes: Record<string, unknown>,
  relationships: Record<string, unknown>,
): FixtureRecord => ({
  type: `asset--${bundle}`,
  id,
  attributes: {
    drupal_internal__id: n,
    drupal_internal__revision_id: n,
    langcode: 'en',
    name,
    status: 'active',
    archived: null,
    created: t('2021-06-01T00:00:00'),
    changed: t('2021-06-01T00:00:00'),
    notes: null,
    flag: [],
    id_tag: [],
    intrinsic_geometry: null,
    is_location: false,
    is_fixed: false,
    ...attributes,
  },
  relationships: { uid: { data: null }, owner: { data: [] }, parent: { data: [] }, ...relationships },
});
const rel = (type: string, id: string, meta: Record<string, unknown> = {}) => ({
  type,
  id,
  meta: { drupal_internal__target_id: 1, ...meta },
});

function records(base: string): Record<string, FixtureRecord[]> {
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
          // A term's photo (farmOS 3.x): its file comes before the term.
          image: { data: [rel('file--file', FIXTURE.photo, { alt: 'Ripe tomatoes', title: '' })] },
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
    'taxonomy_term--material_type': [
      term('material_type', FIXTURE.compost, 2, 'Compost'),
      term('material_type', FIXTURE.straw, 3, 'Straw'),
    ],
    'taxonomy_term--product_type': [term('product_type', FIXTURE.jam, 4, 'Jam')],
    'taxonomy_term--animal_type': [term('animal_type', FIXTURE.sheep, 5, 'Sheep')],
    // farmOS 3.1's products (PR #787).
    'asset--product': [
      asset(
        'product',
        FIXTURE.preserves,
        2,
        'Tomato jam',
        {},
        { product_type: { data: rel('taxonomy_term--product_type', FIXTURE.jam) } },
      ),
    ],
    // Archived, and castrated: what farmOS 4.x serves as `archived: true`, `last_archived` and `is_sterile`.
    'asset--animal': [
      asset(
        'animal',
        FIXTURE.dolly,
        3,
        'Dolly',
        { status: 'archived', archived: t('2021-07-01T00:00:00'), is_castrated: true, sex: 'F', nickname: [] },
        { animal_type: { data: rel('taxonomy_term--animal_type', FIXTURE.sheep) } },
      ),
    ],
    // To-many material types (farmOS 3.0).
    'quantity--material': [
      {
        type: 'quantity--material',
        id: FIXTURE.mulch,
        attributes: {
          drupal_internal__id: 1,
          drupal_internal__revision_id: 1,
          langcode: 'en',
          measure: 'weight',
          value: { numerator: 5, denominator: 2, decimal: '2.5' },
          label: 'mulch',
          created: t('2021-06-02T10:00:00'),
          changed: t('2021-06-02T10:00:00'),
        },
        relationships: {
          uid: { data: rel('user--user', FIXTURE.farmer) },
          units: { data: null },
          material_type: {
            data: [
              rel('taxonomy_term--material_type', FIXTURE.compost),
              rel('taxonomy_term--material_type', FIXTURE.straw),
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
        id: FIXTURE.photo,
        attributes: {
          drupal_internal__fid: 3,
          langcode: 'en',
          filename: 'tomato.jpg',
          uri: { value: 'private://2021-06/tomato.jpg', url: '/system/files/2021-06/tomato.jpg' },
          filemime: 'image/jpeg',
          filesize: Buffer.byteLength(PHOTO_BYTES),
          status: true,
          created: t('2021-06-02T09:30:00'),
          changed: t('2021-06-02T09:30:00'),
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
          quantity: { data: [rel('quantity--material', FIXTURE.mulch)] },
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

/**
 * The same farm as farmOS 4.x serves it (its 4.0 release post): assets without `status`, a boolean
 * `archived` and the time as `last_archived` (PR #986); `is_sterile` for `is_castrated` (PR #960);
 * and what only 4.x has: an abandoned log (PR #945), a farm organization that the home field is in
 * (PR #849).
 */
function as4x(data: Record<string, FixtureRecord[]>): Record<string, FixtureRecord[]> {
  const out: Record<string, FixtureRecord[]> = {};
  for (const [type, list] of Object.entries(data)) {
    out[type] = list.map((r) => {
      if (!type.startsWith('asset--')) return r;
      const { status, archived, is_castrated, ...attributes } = r.attributes;
      return {
        ...r,
        attributes: {
          ...attributes,
          archived: status === 'archived',
          last_archived: archived ?? null,
          ...(is_castrated === undefined ? {} : { is_sterile: is_castrated }),
        },
      };
    });
  }
  out['log--activity'] = [
    ...out['log--activity']!,
    {
      type: 'log--activity',
      id: FIXTURE.abandoned,
      attributes: {
        drupal_internal__id: 4,
        drupal_internal__revision_id: 4,
        langcode: 'en',
        name: 'Spray the orchard',
        timestamp: t('2021-06-06T10:00:00'),
        status: 'abandoned',
        created: t('2021-06-05T10:00:00'),
        changed: t('2021-06-06T10:00:00'),
      },
      relationships: { uid: { data: rel('user--user', FIXTURE.farmer) }, owner: { data: [] }, asset: { data: [] } },
    },
  ];
  out['organization--farm'] = [
    {
      type: 'organization--farm',
      id: FIXTURE.farm,
      attributes: {
        drupal_internal__id: 1,
        drupal_internal__revision_id: 1,
        langcode: 'en',
        name: 'Home farm',
        created: t('2021-05-01T00:00:00'),
        changed: t('2021-05-01T00:00:00'),
      },
      relationships: { uid: { data: rel('user--user', FIXTURE.admin) } },
    },
  ];
  for (const r of out['asset--land']!)
    if (r.id === FIXTURE.field)
      r.relationships = { ...r.relationships, farm: { data: rel('organization--farm', FIXTURE.farm) } };
  return out;
}

/**
 * The same farm as farmOS 2.x serves it: a material quantity's `material_type` to-one (to-many
 * since 3.0), and no products (3.1).
 */
function as2x(data: Record<string, FixtureRecord[]>): Record<string, FixtureRecord[]> {
  const out: Record<string, FixtureRecord[]> = {};
  for (const [type, list] of Object.entries(data)) {
    if (type === 'asset--product' || type === 'taxonomy_term--product_type') continue;
    out[type] =
      type === 'quantity--material'
        ? list.map((r) => {
            const types = (r.relationships.material_type as { data: unknown[] }).data;
            return { ...r, relationships: { ...r.relationships, material_type: { data: types[0] ?? null } } };
          })
        : list;
  }
  return out;
}

/** What only a source with `faults` serves: a file whose bytes are not its size, a log about an asset that is not there. */
function withoutFaults(data: Record<string, FixtureRecord[]>): Record<string, FixtureRecord[]> {
  const faulty = new Set([FIXTURE.badFile, FIXTURE.dangling]);
  return Object.fromEntries(Object.entries(data).map(([type, list]) => [type, list.filter((r) => !faulty.has(r.id))]));
}

/** Drupal's own page for a path no module answers (farmOS 4.x's `/api` and `/oauth/token` when farm_api is off). */
function drupalNotFound(res: ServerResponse): void {
  res.writeHead(404, { 'Content-Type': 'text/html; charset=UTF-8' });
  res.end(
    '<!DOCTYPE html><html><head><title>Page not found | Fixture farm</title></head><body><h1>Page not found</h1><p>The requested page could not be found.</p></body></html>',
  );
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
  /** Which farmOS it is: 3.x (meta.farm.version 3.2.0, the default), 4.x (4.0.0) or 2.x (2.2.2), its records in that version's shape. */
  version?: '2.x' | '3.x' | '4.x';
  /** The records and collection that fail on purpose (a bad file, a dangling log, a collection that always answers 500); default true. */
  faults?: boolean;
  /** The `meta.farm.version` its `/api` says, when not the version's own (a version the importer does not know). */
  reports?: string;
  /** farmOS 4.x with `farm_api` (and its OAuth2 server) not installed: `/api` and `/oauth/token` are 404 pages. */
  farmApi?: boolean;
  /** farmOS 4.x whose OAuth2 keys were never generated: the token endpoint answers simple_oauth's server_error. */
  oauthKeys?: boolean;
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
    if (options.farmApi === false && (url.pathname === '/oauth/token' || url.pathname.startsWith('/api')))
      return drupalNotFound(res);
    if (url.pathname === '/oauth/token' && req.method === 'POST' && options.oauthKeys === false) {
      // simple_oauth's Oauth2GrantManager::checkKeyPaths, an OAuthServerException::serverError (500).
      const message =
        'The authorization server encountered an unexpected condition which prevented it from fulfilling the request: You need to set the OAuth2 secret and private keys.';
      return send(res, 500, { error: 'server_error', error_description: message, message });
    }
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
      return res.end(
        url.pathname.endsWith('/map.txt') ? MAP_BYTES : url.pathname.endsWith('/tomato.jpg') ? PHOTO_BYTES : 'short',
      );
    }
    const faults = options.faults !== false;
    const shaped =
      options.version === '4.x' ? as4x(records(base)) : options.version === '2.x' ? as2x(records(base)) : records(base);
    const data = faults ? shaped : withoutFaults(shaped);
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
          farm: {
            name: 'Fixture farm',
            url: base,
            version: options.reports ?? { '2.x': '2.2.2', '3.x': '3.2.0', '4.x': '4.0.0' }[options.version ?? '3.x'],
          },
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
    if (url.pathname === '/api/log/observation' && faults)
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
