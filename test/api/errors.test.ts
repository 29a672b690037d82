// Every failure is a JSON:API error document (issue 4 item 9; farmos-behaviour.md §4.2–4.3):
// `errors[]` with `status` as a string, a `title`, a `detail` naming the field or parameter, and
// `source.pointer` or `source.parameter` where it applies. One test per status. After each
// failed write the collection (and the record) is unchanged. A property test sends random junk
// query strings and bodies: no input yields a 5xx.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request, JSONAPI, type ApiResponse } from '../support/http.ts';
import { Api, ref, collectionPath, model } from '../support/fixtures.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { junkBody, junkQuery } from '../support/hostile.ts';

let server: TestServer;
let api: Api;
let viewer: Api;
let harvest: any; // a log--harvest
let activity: any; // a log--activity
let tractor: any; // an asset--equipment

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  await createUser(server.ctx.db.knex, { name: 'viewer_e', password: 'viewer-password', roles: ['farm_viewer'] });
  viewer = new Api(server.url, await passwordToken(server.url, 'viewer_e', 'viewer-password'));
  tractor = await api.create('asset--equipment', { name: 'Tractor' });
  harvest = await api.create(
    'log--harvest',
    { name: 'First harvest', timestamp: 1700000000 },
    { asset: { data: [ref(tractor)] } },
  );
  activity = await api.create('log--activity', { name: 'Mowing', timestamp: 1700000000, status: 'done' });
});
after(() => server.close());

interface Expect {
  /** source.pointer expected on (every / the first) error. */
  pointer?: string | RegExp;
  /** source.parameter expected. */
  parameter?: string | RegExp;
  /** Fragments the detail must contain (case-insensitive). */
  detail?: Array<string | RegExp>;
}

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
};

function matches(value: unknown, want: string | RegExp): boolean {
  return typeof want === 'string' ? value === want : typeof value === 'string' && want.test(value);
}

/** Assert a JSON:API error document with this status; checks `want` against the first error. */
function assertError(res: ApiResponse, status: number, want: Expect = {}, label = ''): any[] {
  const where = `${label} → ${res.status} ${res.text.slice(0, 400)}`;
  assert.equal(res.status, status, where);
  assert.match(res.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/, `${where}: content type`);
  assert.ok(Array.isArray(res.body?.errors) && res.body.errors.length > 0, `${where}: errors[]`);
  for (const e of res.body.errors) {
    assert.equal(e.status, String(status), `${where}: status is a string`);
    assert.equal(e.title, TITLES[status], `${where}: title`);
    assert.equal(typeof e.detail, 'string', `${where}: detail`);
    assert.ok(e.detail.length > 10, `${where}: a detail that says something`);
  }
  const first = res.body.errors[0];
  if (want.pointer !== undefined)
    assert.ok(
      matches(first.source?.pointer, want.pointer),
      `${where}: source.pointer ${JSON.stringify(first.source)} should be ${want.pointer}`,
    );
  if (want.parameter !== undefined)
    assert.ok(
      matches(first.source?.parameter, want.parameter),
      `${where}: source.parameter ${JSON.stringify(first.source)} should be ${want.parameter}`,
    );
  for (const d of want.detail ?? []) {
    const ok = typeof d === 'string' ? first.detail.toLowerCase().includes(d.toLowerCase()) : d.test(first.detail);
    assert.ok(ok, `${where}: detail should mention ${d}`);
  }
  return res.body.errors;
}

/** The state of a collection (and optionally one record), to compare before and after a failed write. */
async function snapshot(type: string, id?: string): Promise<unknown> {
  const internalId = model.entityTypes[type.split('--')[0]!]!.internalId;
  const list = await api.all(`${collectionPath(type)}?sort=${internalId}&page[limit]=50`);
  const one = id ? (await api.get(`${collectionPath(type)}/${id}`)).body : null;
  return { list: list.map((r) => [r.id, r.attributes, r.relationships]), one };
}

/** Run a failing write and assert the collection it aimed at did not change. */
async function nothingWritten<T>(type: string, run: () => Promise<T>, id?: string): Promise<T> {
  const before = await snapshot(type, id);
  const result = await run();
  assert.deepEqual(await snapshot(type, id), before, `a failed write to ${type} left the collection unchanged`);
  return result;
}

const raw = (method: string, path: string, body: string | undefined, headers: Record<string, string> = {}) =>
  api.raw(method, path, body, { 'Content-Type': JSONAPI, Accept: JSONAPI, ...headers });

test('400: a malformed document', async () => {
  await nothingWritten('log--activity', async () => {
    assertError(
      await raw('POST', '/api/log/activity', '{"data": {"type": "log--activity", '),
      400,
      { pointer: '', detail: ['JSON'] },
      'malformed JSON',
    );
    assertError(await raw('POST', '/api/log/activity', ''), 400, { detail: ['body'] }, 'empty body');
    assertError(await api.post('/api/log/activity', {}), 400, { detail: ['data'] }, 'no data member');
    assertError(
      await api.post('/api/log/activity', { meta: {} }),
      400,
      { pointer: '/data', detail: ['data'] },
      'meta but no data',
    );
    assertError(
      await api.post('/api/log/activity', { data: [] }),
      400,
      { pointer: '/data', detail: ['data'] },
      'data is a list',
    );
    assertError(
      await api.post('/api/log/activity', { data: { attributes: { name: 'x' } } }),
      400,
      { pointer: '/data/type', detail: ['type'] },
      'no type',
    );
    assertError(
      await api.post('/api/log/activity', { data: { type: 'log--activity' }, attributes: { name: 'x' } }),
      400,
      { detail: ['attributes'] },
      'attributes at the top level',
    );
    assertError(
      await api.post('/api/log/activity', { data: { type: 'log--activity', attributes: 'x' } }),
      400,
      { pointer: '/data/attributes' },
      'attributes not an object',
    );
    assertError(
      await api.post('/api/log/activity', {
        data: { type: 'log--activity', relationships: { asset: { data: [{ type: 'asset--equipment' }] } } },
      }),
      400,
      { pointer: /^\/data\/relationships\/asset\/data\/0/, detail: ['asset', 'id'] },
      'identifier without id',
    );
    assertError(
      await api.post('/api/log/activity', {
        data: { type: 'log--activity', relationships: { asset: { data: [{ id: tractor.id }] } } },
      }),
      400,
      { pointer: /^\/data\/relationships\/asset\/data\/0/, detail: ['asset', 'type'] },
      'identifier without type',
    );
  });
  // PATCH without data.id, or with another id.
  await nothingWritten(
    'log--activity',
    async () => {
      assertError(
        await api.patch(`/api/log/activity/${activity.id}`, {
          data: { type: 'log--activity', attributes: { name: 'x' } },
        }),
        400,
        { pointer: '/data/id', detail: ['id'] },
        'PATCH without id',
      );
      assertError(
        await api.patch(`/api/log/activity/${activity.id}`, {
          data: { type: 'log--activity', id: harvest.id, attributes: { name: 'x' } },
        }),
        400,
        { pointer: '/data/id', detail: [harvest.id] },
        'PATCH with another id',
      );
    },
    activity.id,
  );
});

test('400: a malformed query, naming the parameter', async () => {
  const q = (s: string) => api.get(`/api/log/harvest?${s}`);
  assertError(
    await q('filter[a][condition][path]=name&filter[a][condition][operator]=LIKE&filter[a][condition][value]=x'),
    400,
    { parameter: /^filter/, detail: ['LIKE'] },
    'unknown operator',
  );
  assertError(
    await q('filter[nonsense]=1'),
    400,
    { parameter: /^filter/, detail: ['nonsense'] },
    'unknown field in a filter path',
  );
  assertError(
    await q('filter[asset.nonsense]=1'),
    400,
    { parameter: /^filter/, detail: ['nonsense'] },
    'unknown field behind a relationship',
  );
  assertError(
    await q('filter[name.value]=x'),
    400,
    { parameter: /^filter/, detail: ['name'] },
    'property of a single-value field',
  );
  // A bare compound field means its main property (filter[notes] is notes.value, compound-filters.test.ts);
  // a fraction has none, so it must name one.
  assertError(
    await q('filter[quantity.value]=x'),
    400,
    { parameter: /^filter/, detail: ['value'] },
    'compound field without a main property',
  );
  assertError(
    await q(`filter[asset]=${tractor.id}`),
    400,
    { parameter: /^filter/, detail: ['asset'] },
    'relationship without a specifier',
  );
  assertError(
    await q('filter[a][condition][path]=name&filter[a][condition][operator]=IS NULL&filter[a][condition][value]=x'),
    400,
    { parameter: /^filter/, detail: ['IS NULL'] },
    'IS NULL with a value',
  );
  assertError(
    await q('filter[a][condition][path]=name&filter[a][condition][operator]=BETWEEN&filter[a][condition][value][]=x'),
    400,
    { parameter: /^filter/, detail: ['BETWEEN'] },
    'BETWEEN with one value',
  );
  assertError(
    await q('filter[a][condition][operator]=%3D&filter[a][condition][value]=x'),
    400,
    { parameter: /^filter/, detail: ['path'] },
    'condition without path',
  );
  assertError(
    await q('filter[a][condition][path]=name&filter[a][condition][memberOf]=nowhere&filter[a][condition][value]=x'),
    400,
    { parameter: /^filter/, detail: ['nowhere'] },
    'memberOf an unknown group',
  );
  assertError(
    await q('filter[timestamp]=yesterday'),
    400,
    { parameter: /^filter/, detail: ['yesterday'] },
    'timestamp that is no date',
  );
  assertError(
    await q('filter[is_movement]=maybe'),
    400,
    { parameter: /^filter/, detail: ['maybe'] },
    'boolean that is no boolean',
  );
  assertError(await q('sort=nonsense'), 400, { parameter: /^sort/, detail: ['nonsense'] }, 'unknown sort field');
  assertError(await q('sort='), 400, { parameter: /^sort/ }, 'empty sort');
  assertError(
    await q('sort[a][path]=name&sort[a][direction]=UP'),
    400,
    { parameter: /^sort/, detail: ['UP'] },
    'bad sort direction',
  );
  assertError(await q('include=nonsense'), 400, { parameter: 'include', detail: ['nonsense'] }, 'unknown include');
  assertError(await q('include=name'), 400, { parameter: 'include', detail: ['name'] }, 'include of an attribute');
  assertError(
    await q('include=asset.nonsense'),
    400,
    { parameter: 'include', detail: ['nonsense'] },
    'unknown include at depth 2',
  );
  assertError(
    await api.get(`/api/log/harvest/${harvest.id}?include=nonsense`),
    400,
    { parameter: 'include', detail: ['nonsense'] },
    'unknown include on an individual route',
  );
  assertError(await q('page[limit]=0'), 400, { parameter: 'page[limit]', detail: ['positive'] }, 'page[limit]=0');
  assertError(await q('page[limit]=-5'), 400, { parameter: 'page[limit]' }, 'negative page[limit]');
  assertError(await q('page[limit]=ten'), 400, { parameter: 'page[limit]' }, 'page[limit] not a number');
  assertError(await q('page[offset]=-1'), 400, { parameter: 'page[offset]' }, 'negative page[offset]');
  assertError(await q('page=5'), 400, { parameter: 'page' }, 'page not an object');
  assertError(await q('foo=1'), 400, { parameter: 'foo', detail: ['foo'] }, 'unknown lowercase parameter');
  assertError(
    await api.get(`/api/log/harvest/${harvest.id}?bar=1`),
    400,
    { parameter: 'bar', detail: ['bar'] },
    'unknown lowercase parameter on an individual route',
  );
  // A custom parameter (a character other than a-z) is allowed, as in Drupal.
  // (resourceVersion=id:… on a collection is a 400 as in Drupal, see revisions.test.ts.)
  assert.equal((await q('resourceVersion=rel:latest-version')).status, 200);
  assert.equal((await q('my_param=1')).status, 200);
});

test('401: no token, a bad token, `Bearer undefined`', async () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['no token', {}],
    ['a bad token', { Authorization: 'Bearer not-a-token' }],
    ['Bearer undefined (farmOS.js before it has a token)', { Authorization: 'Bearer undefined' }],
  ];
  await nothingWritten(
    'log--activity',
    async () => {
      for (const [label, headers] of cases) {
        for (const [method, path] of [
          ['GET', '/api/log/activity'],
          ['GET', `/api/log/activity/${activity.id}`],
          ['POST', '/api/log/activity'],
          ['DELETE', `/api/log/activity/${activity.id}`],
        ] as const) {
          const res = await request(`${server.url}${path}`, {
            method,
            headers,
            ...(method === 'POST' ? { json: { data: { type: 'log--activity', attributes: { name: 'x' } } } } : {}),
          });
          assertError(res, 401, {}, `${label}: ${method} ${path}`);
          assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/, `${label}: WWW-Authenticate`);
        }
      }
    },
    activity.id,
  );
  // The entry point and schemas stay public.
  assert.equal((await request(`${server.url}/api`)).status, 200);
  assert.equal((await request(`${server.url}/api/log/activity/resource/schema`)).status, 200);
});

test('403: a farm_viewer may read but not write', async () => {
  assert.equal((await viewer.get('/api/log/activity')).status, 200);
  assert.equal((await viewer.get(`/api/log/activity/${activity.id}`)).status, 200);
  await nothingWritten('log--activity', async () => {
    assertError(
      await viewer.post('/api/log/activity', { data: { type: 'log--activity', attributes: { name: 'Viewer log' } } }),
      403,
      { pointer: '/data', detail: ['POST'] },
      'viewer POST',
    );
  });
  await nothingWritten(
    'log--activity',
    async () => {
      assertError(
        await viewer.patch(`/api/log/activity/${activity.id}`, {
          data: { type: 'log--activity', id: activity.id, attributes: { name: 'Viewer edit' } },
        }),
        403,
        { pointer: '/data', detail: ['PATCH'] },
        'viewer PATCH',
      );
      assertError(
        await viewer.delete(`/api/log/activity/${activity.id}`),
        403,
        { pointer: '/data', detail: ['DELETE'] },
        'viewer DELETE',
      );
      assertError(
        await viewer.post(`/api/log/activity/${activity.id}/relationships/asset`, { data: [ref(tractor)] }),
        403,
        {},
        'viewer relationship POST',
      );
    },
    activity.id,
  );
  await nothingWritten('taxonomy_term--unit', async () => {
    assertError(
      await viewer.post('/api/taxonomy_term/unit', {
        data: { type: 'taxonomy_term--unit', attributes: { name: 'kg' } },
      }),
      403,
      {},
      'viewer creates a term',
    );
  });
});

test('404: unknown UUID, a UUID of another bundle, a relationship to a missing record, PATCH of an unknown UUID', async () => {
  const unknown = randomUUID();
  assertError(await api.get(`/api/log/activity/${unknown}`), 404, { detail: [unknown] }, 'unknown UUID');
  assertError(await api.get('/api/log/activity/not-a-uuid'), 404, {}, 'not a UUID');
  assertError(
    await api.get(`/api/log/activity/${harvest.id}`),
    404,
    { detail: [harvest.id] },
    'a harvest UUID on the activity route',
  );
  assertError(await api.get(`/api/asset/equipment/${harvest.id}`), 404, {}, 'a log UUID on an asset route');
  assertError(
    await api.get(`/api/log/activity/${unknown}/relationships/asset`),
    404,
    {},
    'relationship route of an unknown UUID',
  );
  assertError(await api.get(`/api/log/activity/${unknown}/asset`), 404, {}, 'related route of an unknown UUID');
  await nothingWritten('log--activity', async () => {
    // farmOS.js PATCHes first and POSTs only on 404.
    assertError(
      await api.patch(`/api/log/activity/${unknown}`, {
        data: { type: 'log--activity', id: unknown, attributes: { name: 'x' } },
      }),
      404,
      { detail: [unknown] },
      'PATCH of an unknown UUID',
    );
    assertError(await api.delete(`/api/log/activity/${unknown}`), 404, {}, 'DELETE of an unknown UUID');
    assertError(
      await api.patch(`/api/log/activity/${harvest.id}`, {
        data: { type: 'log--activity', id: harvest.id, attributes: { name: 'x' } },
      }),
      404,
      {},
      'PATCH of another bundle’s UUID',
    );
    const missing = randomUUID();
    const res = await api.post('/api/log/activity', {
      data: {
        type: 'log--activity',
        id: unknown,
        attributes: { name: 'x' },
        relationships: { asset: { data: [ref(tractor), { type: 'asset--equipment', id: missing }] } },
      },
    });
    assertError(
      res,
      404,
      { pointer: '/data/relationships/asset/data/1', detail: [missing] },
      'relationship to a missing record',
    );
    assertError(
      await api.post(`/api/log/activity/${activity.id}/relationships/asset`, {
        data: [{ type: 'asset--equipment', id: missing }],
      }),
      404,
      { detail: [missing] },
      'relationship endpoint with a missing record',
    );
  });
  assert.equal((await api.get(`/api/log/activity/${unknown}`)).status, 404, 'the failed POST created nothing');
  assertError(await api.get('/api/log/nonsense'), 404, {}, 'unknown bundle');
  assertError(await api.get(`/api/log/activity/${activity.id}/nonsense`), 404, {}, 'unknown relationship');
});

test('405 with Allow', async () => {
  const cases: Array<[string, string, string]> = [
    ['PUT', `/api/log/activity/${activity.id}`, 'GET, PATCH, DELETE'],
    ['POST', `/api/log/activity/${activity.id}`, 'GET, PATCH, DELETE'],
    ['DELETE', '/api/log/activity', 'GET, POST'],
    ['PATCH', '/api/log/activity', 'GET, POST'],
    ['PUT', `/api/log/activity/${activity.id}/relationships/asset`, 'GET, POST, PATCH, DELETE'],
    ['POST', `/api/log/activity/${activity.id}/asset`, 'GET'],
  ];
  await nothingWritten(
    'log--activity',
    async () => {
      for (const [method, path, allow] of cases) {
        const res = await raw(method, path, JSON.stringify({ data: { type: 'log--activity', id: activity.id } }));
        assertError(res, 405, { detail: [method] }, `${method} ${path}`);
        assert.deepEqual(
          (res.headers.get('allow') ?? '').split(/,\s*/).sort(),
          allow.split(', ').sort(),
          `${method} ${path}: Allow`,
        );
      }
    },
    activity.id,
  );
});

test('409: an existing client UUID, a wrong type', async () => {
  await nothingWritten(
    'log--activity',
    async () => {
      assertError(
        await api.post('/api/log/activity', {
          data: { type: 'log--activity', id: activity.id, attributes: { name: 'Again' } },
        }),
        409,
        { pointer: '/data/id', detail: [activity.id] },
        'existing UUID',
      );
      assertError(
        await api.post('/api/log/activity', {
          data: { type: 'log--activity', id: harvest.id, attributes: { name: 'Again' } },
        }),
        409,
        { pointer: '/data/id' },
        'UUID of a log of another bundle',
      );
      assertError(
        await api.post('/api/log/activity', { data: { type: 'log--harvest', attributes: { name: 'Wrong' } } }),
        409,
        { pointer: '/data/type', detail: ['log--harvest'] },
        'wrong type on POST',
      );
      assertError(
        await api.patch(`/api/log/activity/${activity.id}`, {
          data: { type: 'log--harvest', id: activity.id, attributes: { name: 'Wrong' } },
        }),
        409,
        { pointer: '/data/type' },
        'wrong type on PATCH',
      );
    },
    activity.id,
  );
  assert.equal(
    (await api.get(`/api/log/harvest/${harvest.id}`)).body.data.attributes.name,
    'First harvest',
    'the harvest log was not overwritten',
  );
});

test('415: writes without application/vnd.api+json', async () => {
  const body = JSON.stringify({ data: { type: 'log--activity', attributes: { name: 'Plain JSON' } } });
  const patchBody = JSON.stringify({
    data: { type: 'log--activity', id: activity.id, attributes: { name: 'Plain JSON' } },
  });
  await nothingWritten(
    'log--activity',
    async () => {
      assertError(
        await raw('POST', '/api/log/activity', body, { 'Content-Type': 'application/json' }),
        415,
        { detail: ['application/vnd.api+json'] },
        'POST application/json',
      );
      assertError(
        await raw('PATCH', `/api/log/activity/${activity.id}`, patchBody, { 'Content-Type': 'application/json' }),
        415,
        {},
        'PATCH application/json',
      );
      assertError(
        await raw('POST', '/api/log/activity', body, { 'Content-Type': 'text/plain' }),
        415,
        {},
        'POST text/plain',
      );
      const noType = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token: api.token,
        body: new Blob([body]),
      });
      assertError(noType, 415, {}, 'POST without Content-Type');
      assertError(
        await raw(
          'POST',
          `/api/log/activity/${activity.id}/relationships/asset`,
          JSON.stringify({ data: [ref(tractor)] }),
          { 'Content-Type': 'application/json' },
        ),
        415,
        {},
        'relationship POST application/json',
      );
    },
    activity.id,
  );
});

test('422: one error per violation, each naming its field', async () => {
  // Six problems with the values sent, in one document.
  const errors = await nothingWritten('asset--land', async () =>
    assertError(
      await api.post('/api/asset/land', {
        data: {
          type: 'asset--land',
          attributes: {
            colour: 'red',
            is_fixed: 'maybe',
            land_type: 'swamp',
            name: 'x'.repeat(256),
            archived: '2024-13-45T00:00:00Z',
            intrinsic_geometry: 'POINT (oops)',
          },
        },
      }),
      422,
    ),
  );
  const byPointer = new Map(errors.map((e) => [e.source?.pointer, e.detail as string]));
  const want: Array<[string, RegExp]> = [
    ['/data/attributes/colour', /colour/],
    ['/data/attributes/is_fixed', /is_fixed/],
    ['/data/attributes/land_type', /land_type.*swamp|swamp.*land_type/],
    ['/data/attributes/name', /name.*255|255.*name/],
    ['/data/attributes/archived', /archived.*2024-13-45|2024-13-45.*archived/],
    ['/data/attributes/intrinsic_geometry', /intrinsic_geometry.*POINT \(oops\)|POINT \(oops\).*intrinsic_geometry/],
  ];
  for (const [pointer, detail] of want) {
    assert.ok(byPointer.has(pointer), `an error for ${pointer}; got ${JSON.stringify([...byPointer.keys()])}`);
    assert.match(byPointer.get(pointer)!, detail, pointer);
  }
  assert.equal(errors.length, want.length, 'one error per violation, no more');

  // Required fields: both missing ones are reported.
  const required = await nothingWritten('asset--land', async () =>
    assertError(
      await api.post('/api/asset/land', {
        data: { type: 'asset--land', attributes: { notes: { value: 'no name, no type' } } },
      }),
      422,
    ),
  );
  assert.deepEqual(required.map((e) => e.source?.pointer).sort(), [
    '/data/attributes/land_type',
    '/data/attributes/name',
  ]);
  for (const e of required) assert.match(e.detail, /^(name|land_type)\b/);
  // A missing required relationship points at the relationship: Tilth's choice, where farmOS
  // points at /data/attributes/animal_type (README, "Where Tilth differs from farmOS").
  const noType = await nothingWritten('asset--animal', async () =>
    assertError(
      await api.post('/api/asset/animal', { data: { type: 'asset--animal', attributes: { name: 'Nameless breed' } } }),
      422,
    ),
  );
  assert.deepEqual(
    noType.map((e) => e.source?.pointer),
    ['/data/relationships/animal_type'],
  );
  assert.match(noType[0]!.detail, /^animal_type\b/);

  // Single violations, each on its own.
  const single: Array<[string, unknown, string, RegExp]> = [
    ['log--activity', { timestamp: 'next tuesday' }, '/data/attributes/timestamp', /timestamp.*next tuesday/],
    ['log--activity', { timestamp: true }, '/data/attributes/timestamp', /timestamp/],
    ['log--activity', { status: 'finished' }, '/data/attributes/status', /status.*finished/],
    ['log--activity', { geometry: 'LINESTRING (1)' }, '/data/attributes/geometry', /geometry/],
    ['log--activity', { name: { a: 1 } }, '/data/attributes/name', /name/],
    ['log--activity', { flag: ['urgent'] }, '/data/attributes/flag/0', /flag.*urgent/],
    ['log--activity', { notes: { value: 'x', format: 'full_html' } }, '/data/attributes/notes', /notes.*full_html/],
    ['quantity--standard', { value: { numerator: 'many' } }, '/data/attributes/value', /value/],
    ['quantity--standard', { measure: 'furlongs' }, '/data/attributes/measure', /measure.*furlongs/],
    [
      'taxonomy_term--plant_type',
      { name: 'Tomato', maturity_days: -3 },
      '/data/attributes/maturity_days',
      /maturity_days/,
    ],
    ['log--activity', { asset: [] }, '/data/attributes/asset', /asset.*relationship/],
  ];
  for (const [type, attributes, pointer, detail] of single) {
    const res = await nothingWritten(type, () => api.post(collectionPath(type), { data: { type, attributes } }));
    const errs = assertError(res, 422, { pointer, detail: [detail] }, `${type} ${JSON.stringify(attributes)}`);
    assert.equal(errs.length, 1, `${JSON.stringify(attributes)}: one error`);
  }
  // A relationship to a record of a type the field does not take.
  const unit = await api.create('taxonomy_term--unit', { name: 'kg' });
  const wrongTarget = await nothingWritten('log--activity', () =>
    api.post('/api/log/activity', { data: { type: 'log--activity', relationships: { asset: { data: [ref(unit)] } } } }),
  );
  assertError(
    wrongTarget,
    422,
    { pointer: '/data/relationships/asset/data/0', detail: ['asset'] },
    'a unit as an asset',
  );
  const notLocation = await nothingWritten('log--activity', () =>
    api.post('/api/log/activity', {
      data: { type: 'log--activity', relationships: { location: { data: [ref(tractor)] } } },
    }),
  );
  assertError(
    notLocation,
    422,
    { pointer: '/data/relationships/location/data/0', detail: ['location'] },
    'a non-location asset as location',
  );
  // A PATCH with a violation changes nothing, not even the valid members sent with it.
  const patch = await nothingWritten(
    'log--activity',
    () =>
      api.patch(`/api/log/activity/${activity.id}`, {
        data: { type: 'log--activity', id: activity.id, attributes: { name: 'Valid new name', status: 'finished' } },
      }),
    activity.id,
  );
  assertError(patch, 422, { pointer: '/data/attributes/status' }, 'PATCH with a bad status');
});

// Drupal core's FileAccessControlHandler::checkCreateAccess() is neutral, so JSON:API refuses
// POST /jsonapi/file/file (403): file entities are created only by upload (farmos-behaviour.md §5).
test('a bare POST to /api/file/file does not create an empty file (files are created by upload)', async () => {
  const res = await nothingWritten('file--file', () =>
    api.post('/api/file/file', { data: { type: 'file--file', attributes: {} } }),
  );
  assert.ok([403, 405, 422].includes(res.status), `POST /api/file/file → ${res.status}: ${res.text.slice(0, 200)}`);
  assertError(res, res.status);
});

test('values that cannot be turned into text (objects with a "toString" member) are named in a 4xx, never a 5xx', async () => {
  const trap = { toString: false };
  await nothingWritten(
    'log--activity',
    async () => {
      assertError(
        await api.patch(`/api/log/activity/${activity.id}`, { data: { type: 'log--activity', id: trap } }),
        400,
        { pointer: '/data/id', detail: ['an object'] },
        'PATCH with an object id',
      );
      assertError(
        await api.post('/api/log/activity', {
          data: { type: 'log--activity', id: { toString: 1 }, attributes: { name: 'x' } },
        }),
        422,
        { pointer: '/data/id', detail: ['an object'] },
        'POST with an object id',
      );
      assertError(
        await api.post('/api/log/activity', {
          data: { type: 'log--activity', attributes: { name: 'x', notes: { value: 'n', format: trap } } },
        }),
        422,
        { pointer: '/data/attributes/notes', detail: ['an object'] },
        'a text format that is an object',
      );
    },
    activity.id,
  );
  assertError(
    await api.get('/api/log/activity?_format[toString]=csv'),
    400,
    { parameter: '_format', detail: ['an object'] },
    '_format as an object',
  );
});

test('attribute values no database column can hold are a 422, never a 5xx: NUL characters, huge integers, far timestamps', async () => {
  // Each a 422 on its field (PostgreSQL text cannot hold U+0000, its integer is 32-bit).
  const writes: Array<[string, Record<string, unknown>, string]> = [
    ['log--activity', { name: 'a\u0000b' }, '/data/attributes/name'],
    ['log--activity', { notes: { value: 'bad \u0000 byte' } }, '/data/attributes/notes'],
    ['log--activity', { data: '\u0000' }, '/data/attributes/data'],
    ['log--activity', { timestamp: 9999999999999 }, '/data/attributes/timestamp'],
    ['log--activity', { timestamp: -9999999999999 }, '/data/attributes/timestamp'],
    ['log--activity', { timestamp: '9999999999999' }, '/data/attributes/timestamp'],
    ['taxonomy_term--unit', { name: 'big', weight: 99999999999 }, '/data/attributes/weight'],
    ['taxonomy_term--unit', { name: 'small', weight: -99999999999 }, '/data/attributes/weight'],
    ['asset--animal', { name: 'Tagged', id_tag: [{ id: 'a\u0000', type: 'eid' }] }, '/data/attributes/id_tag/0'],
  ];
  for (const [type, attributes, pointer] of writes) {
    const res = await nothingWritten(type, () => api.post(collectionPath(type), { data: { type, attributes } }));
    assertError(res, 422, { pointer }, `${type} ${JSON.stringify(attributes)}`);
  }
});

test('relationship item meta that no database column can hold is a 4xx, never a 5xx', async () => {
  // Item meta is stored with the reference (a file's description).
  const up = await api.raw('POST', '/api/log/activity/file', 'x', {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="x.txt"',
    Accept: JSONAPI,
  });
  assert.equal(up.status, 201, up.text.slice(0, 300));
  const meta = await api.post('/api/log/activity', {
    data: {
      type: 'log--activity',
      relationships: {
        file: { data: [{ type: 'file--file', id: up.body.data.id, meta: { description: 'a\u0000b' } }] },
      },
    },
  });
  assert.ok(meta.status < 500, `file meta with U+0000 → ${meta.status} ${meta.text.slice(0, 300)}`);
});

test('filter values no database column can hold are a 400 or match nothing, never a 5xx', async () => {
  // A 400 naming the filter, or an empty result; never a 5xx.
  const queries = [
    '/api/log/activity?filter[name]=%00',
    '/api/log/activity?filter[a][condition][path]=name&filter[a][condition][operator]=CONTAINS&filter[a][condition][value]=a%00b',
    '/api/log/activity?filter[id]=%00',
    '/api/log/activity?filter[notes.value]=%00',
    '/api/log/activity?filter[asset.name]=%00',
    '/api/log/activity?filter[drupal_internal__id]=99999999999999999999',
    '/api/log/activity?filter[drupal_internal__id]=-99999999999',
    '/api/log/activity?filter[asset.meta.drupal_internal__target_id]=99999999999999999999',
    '/api/log/activity?filter[asset.drupal_internal__id]=99999999999',
    '/api/taxonomy_term/unit?filter[weight]=99999999999',
    '/api/taxonomy_term/unit?filter[a][condition][path]=weight&filter[a][condition][operator]=IN&filter[a][condition][value][]=1&filter[a][condition][value][]=99999999999',
    '/api/log/activity?filter[revision_user.drupal_internal__uid]=99999999999',
    '/api/log/activity?filter[quantity.value.numerator]=99999999999999999999',
    '/api/log/activity?filter[timestamp]=9999999999999',
    '/api/log/activity?sort=name&page[cursor]=%00',
  ];
  const failures: string[] = [];
  for (const q of queries) {
    const res = await api.get(q);
    if (res.status >= 500) failures.push(`GET ${q} → ${res.status}`);
    else if (res.status >= 400) assertError(res, 400, { parameter: /^(filter|sort|page)/ }, q);
  }
  assert.deepEqual(failures, []);
});

test('a cursor made by hand with lists or objects for its values is ignored, not a 500', async () => {
  await api.create('log--activity', { name: 'Mowing again', timestamp: 1700000600, status: 'done' });
  const first = await api.get('/api/log/activity?sort=name&page[limit]=1');
  assert.equal(first.status, 200, first.text);
  const next = new URL(first.body.links.next.href);
  const cursor = JSON.parse(Buffer.from(next.searchParams.get('page[cursor]')!, 'base64url').toString('utf8'));
  for (const v of [[{ toString: 1 }, 1], [['a'], [1]], cursor.v.map(() => ({}))]) {
    next.searchParams.set('page[cursor]', Buffer.from(JSON.stringify({ ...cursor, v })).toString('base64url'));
    const res = await api.get(next.href);
    assert.equal(res.status, 200, `${JSON.stringify(v)}: ${res.text.slice(0, 300)}`);
    assert.equal(
      res.body.data[0]?.id,
      (await api.get('/api/log/activity?sort=name&page[limit]=1&page[offset]=1')).body.data[0]?.id,
      'the page its offset names',
    );
  }
});

test('a cursor made by hand with values of the wrong type for its sort is ignored or matches nothing, not a 500', async () => {
  const first = await api.get('/api/log/activity?sort=-timestamp&page[limit]=1');
  assert.equal(first.status, 200, first.text);
  const next = new URL(first.body.links.next.href);
  const cursor = JSON.parse(Buffer.from(next.searchParams.get('page[cursor]')!, 'base64url').toString('utf8'));
  // Text where the timestamp and the id are numbers; a number too large for any column (1e400 is
  // Infinity once parsed); a fraction for the id.
  const texts = [
    ['"a week ago"', '"x"'],
    ['1e400', '1'],
    [String(cursor.v[0]), '1.5'],
    ['-1e400', '99999999999999999999999'],
  ];
  for (const [a, b] of texts) {
    const raw = `{"o":${cursor.o},"h":${JSON.stringify(cursor.h)},"v":[${a},${b}]}`;
    next.searchParams.set('page[cursor]', Buffer.from(raw).toString('base64url'));
    const res = await api.get(next.href);
    assert.ok(res.status < 500, `${raw}: ${res.status} ${res.text.slice(0, 300)}`);
  }
});

// Random junk never yields a 5xx (the arbitraries: test/support/hostile.ts).
test('property: random junk query strings never produce a 5xx', async () => {
  const junk = junkQuery;
  await fc.assert(
    fc.asyncProperty(
      junk,
      fc.constantFrom(
        '/api/log/activity',
        '/api/log/harvest',
        `/api/log/harvest/${'{id}'}`,
        '/api/asset/equipment',
        '/api/user/user',
      ),
      async (query, path) => {
        const p = path.replace('{id}', harvest.id);
        const res = await api.get(`${p}?${query}`);
        assert.ok(res.status < 500, `GET ${p}?${query} → ${res.status} ${res.text.slice(0, 300)}`);
        if (res.status >= 400)
          assert.equal(res.body?.errors?.[0]?.status, String(res.status), `error document for ?${query}`);
      },
    ),
    { numRuns: 250 },
  );
});

test('property: random junk JSON bodies never produce a 5xx', async () => {
  const body = junkBody(tractor ? [tractor.id] : []);
  const target = fc.constantFrom(
    ['POST', '/api/log/activity'],
    ['PATCH', '/api/log/activity/{id}'],
    ['POST', '/api/log/activity/{id}/relationships/asset'],
    ['PATCH', '/api/log/activity/{id}/relationships/asset'],
    ['DELETE', '/api/log/activity/{id}/relationships/asset'],
  );
  await fc.assert(
    fc.asyncProperty(body, target, async (text, [method, path]) => {
      const p = path!.replace('{id}', activity.id);
      const res = await raw(method!, p, text);
      assert.ok(res.status < 500, `${method} ${p} ${text.slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}`);
    }),
    { numRuns: 250 },
  );
});
