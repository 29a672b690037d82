// Data streams and sensors over HTTP (issue 8 item 8), porting what farmOS's own tests assert:
// DataStreamTest (modules/core/data_stream), SensorDataApiTest and SensorListenerApiTest
// (modules/asset/sensor): readings posted with the private key and read back with start, end,
// limit and offset; public streams readable by anyone; keys generated and shown only to those
// who may update; and bad posts refused with a clear error, writing nothing.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { addUser } from '../oauth/helpers.ts';

let server: TestServer;
let admin: Api;
let viewer: Api;
const DAY = 86400;
const START = 1700000000;

before(async () => {
  server = await startTestServer();
  admin = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  const v = await addUser(server, ['farm_viewer']);
  viewer = new Api(server.url, await passwordToken(server.url, v.name, v.password));
});
after(() => server.close());

/** What a device does: no bearer token, JSON body, the key in the query string. */
function device(
  method: string,
  path: string,
  body?: unknown,
  query: Record<string, string | number> = {},
  headers: Record<string, string> = { 'Content-Type': 'application/json' },
) {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  return request(`${server.url}${path}${qs ? `?${qs}` : ''}`, {
    method,
    headers: { Accept: 'application/json', ...headers },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
}

async function newStream(attributes: Record<string, unknown> = {}) {
  return admin.create('data_stream--basic', {
    name: `stream-${Math.random().toString(36).slice(2, 8)}`,
    ...attributes,
  });
}

const dataPath = (stream: { id: string }) => `/api/data_stream/${stream.id}/data`;

async function readingCount(streamUuid: string): Promise<number> {
  const knex = server.ctx.db.knex;
  const row = await knex('data_stream_basic')
    .join('data_stream', 'data_stream.id', 'data_stream_basic.stream_id')
    .where('data_stream.uuid', streamUuid)
    .count({ n: '*' })
    .first();
  return Number(row!.n);
}

describe('data_stream--basic resources', () => {
  test('CRUD at /api/data_stream/basic; a private key is generated; public defaults to false', async () => {
    const created = await admin.post('/api/data_stream/basic', {
      data: { type: 'data_stream--basic', attributes: { name: 'temperature' } },
    });
    assert.equal(created.status, 201, created.text);
    const stream = created.body.data;
    assert.equal(stream.type, 'data_stream--basic');
    assert.equal(stream.attributes.name, 'temperature');
    assert.match(stream.attributes.private_key, /^[0-9a-f]{32}$/);
    assert.equal(stream.attributes.public, false);
    assert.equal(stream.relationships.data_stream_type.data.meta.drupal_internal__target_id, 'basic');
    assert.deepEqual(stream.relationships.asset.data, []);
    const other = await newStream();
    assert.notEqual(other.attributes.private_key, stream.attributes.private_key, 'each stream gets its own key');

    // farmOS.js sends "" for every string attribute it was not given: a key is generated all the same.
    const blank = await newStream({ private_key: '' });
    assert.match(
      blank.attributes.private_key,
      /^[0-9a-f]{32}$/,
      'an empty key is replaced, never left to match an empty private_key parameter',
    );
    const own = await newStream({ private_key: 'chosen-by-the-farmer' });
    assert.equal(own.attributes.private_key, 'chosen-by-the-farmer', 'a key sent on create is kept');

    const patched = await admin.patch(`/api/data_stream/basic/${stream.id}`, {
      data: { type: 'data_stream--basic', id: stream.id, attributes: { public: true } },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.equal(patched.body.data.attributes.public, true);
    assert.equal(patched.body.data.attributes.private_key, stream.attributes.private_key, 'the key stays');
    const list = await admin.get('/api/data_stream/basic?filter[name]=temperature');
    assert.deepEqual(
      list.body.data.map((d: any) => d.id),
      [stream.id],
    );
    assert.equal((await admin.delete(`/api/data_stream/basic/${stream.id}`)).status, 204);
    assert.equal((await admin.get(`/api/data_stream/basic/${stream.id}`)).status, 404);
  });

  test('the private key is shown only to those who may update the stream, and is not filterable by others', async () => {
    const stream = await newStream();
    const seen = await viewer.get(`/api/data_stream/basic/${stream.id}`);
    assert.equal(seen.status, 200);
    assert.equal(seen.body.data.attributes.name, stream.attributes.name);
    assert.equal('private_key' in seen.body.data.attributes, false, 'a viewer does not see the key');
    const listed = await viewer.get(`/api/data_stream/basic?filter[id]=${stream.id}`);
    assert.equal('private_key' in listed.body.data[0].attributes, false);
    const guess = await viewer.get(
      `/api/data_stream/basic?filter[k][condition][path]=private_key&filter[k][condition][operator]=STARTS_WITH&filter[k][condition][value]=a`,
    );
    assert.equal(guess.status, 403, 'a viewer cannot guess the key through a filter');
    const sorted = await viewer.get('/api/data_stream/basic?sort=private_key');
    assert.equal(sorted.status, 403);
    assert.equal(
      (await admin.get(`/api/data_stream/basic?filter[private_key]=${stream.attributes.private_key}`)).body.data.length,
      1,
    );
    const denied = await viewer.post('/api/data_stream/basic', {
      data: { type: 'data_stream--basic', attributes: { name: 'x' } },
    });
    assert.equal(denied.status, 403);
  });

  test('sensor assets get private and public keys on create and relate to data streams', async () => {
    const stream = await newStream();
    const sensor = await admin.create(
      'asset--sensor',
      { name: 'Weather station' },
      { data_stream: { data: [ref(stream)] } },
    );
    assert.match(sensor.attributes.private_key, /^[0-9a-f]{32}$/);
    assert.match(sensor.attributes.public_key, /^[0-9a-f]{32}$/);
    assert.notEqual(sensor.attributes.public_key, sensor.attributes.private_key);
    assert.deepEqual(
      sensor.relationships.data_stream.data.map((d: any) => d.id),
      [stream.id],
    );
    const asViewer = await viewer.get(`/api/asset/sensor/${sensor.id}?include=data_stream`);
    assert.equal('private_key' in asViewer.body.data.attributes, false);
    assert.equal(asViewer.body.data.attributes.public_key, sensor.attributes.public_key);
    assert.deepEqual(
      asViewer.body.included.map((d: any) => d.id),
      [stream.id],
    );
    assert.equal('private_key' in asViewer.body.included[0].attributes, false, 'nor through include');
  });
});

describe('/api/data_stream/{uuid}/data (farmOS DataStreamTest)', () => {
  let stream: any;
  let key: string;

  before(async () => {
    stream = await newStream();
    key = stream.attributes.private_key;
    // 100 readings over 100 days, in one post (mockBasicData).
    const points = Array.from({ length: 100 }, (_, i) => ({ timestamp: START + i * DAY, [stream.attributes.name]: i }));
    const res = await device('POST', dataPath(stream), points, { private_key: key });
    assert.equal(res.status, 201, res.text);
  });

  test('GET: 403 without the key; all, limit, and start/end with it; public streams need no key', async () => {
    const denied = await device('GET', dataPath(stream));
    assert.equal(denied.status, 403);
    assert.equal(denied.body.errors[0].source.parameter, 'private_key');

    const all = await device('GET', dataPath(stream), undefined, { private_key: key });
    assert.equal(all.status, 200);
    assert.match(all.headers.get('content-type')!, /^application\/json/);
    assert.equal(all.body.length, 100);
    // Newest first, farmOS's shape: {timestamp, <stream name>: "<decimal>"}.
    assert.deepEqual(all.body[0], { timestamp: START + 99 * DAY, [stream.attributes.name]: '99' });
    assert.deepEqual(all.body[99], { timestamp: START, [stream.attributes.name]: '0' });

    assert.equal((await device('GET', dataPath(stream), undefined, { private_key: key, limit: 10 })).body.length, 10);
    const end = START + 14 * DAY;
    const range = await device('GET', dataPath(stream), undefined, { private_key: key, start: START, end });
    assert.equal(range.body.length, 15);
    for (const point of range.body) assert.ok(point.timestamp >= START && point.timestamp <= end);
    const page = await device('GET', dataPath(stream), undefined, { private_key: key, limit: 5, offset: 10 });
    assert.deepEqual(
      page.body.map((p: any) => p.timestamp),
      [89, 88, 87, 86, 85].map((i) => START + i * DAY),
    );

    const wrong = await device('GET', dataPath(stream), undefined, { private_key: 'not-the-key' });
    assert.equal(wrong.status, 403);

    const made = await admin.patch(`/api/data_stream/basic/${stream.id}`, {
      data: { type: 'data_stream--basic', id: stream.id, attributes: { public: true } },
    });
    assert.equal(made.status, 200);
    const open = await device('GET', dataPath(stream));
    assert.equal(open.status, 200);
    assert.equal(open.body.length, 100);
    await admin.patch(`/api/data_stream/basic/${stream.id}`, {
      data: { type: 'data_stream--basic', id: stream.id, attributes: { public: false } },
    });
  });

  test('GET with a bearer token that may view data streams needs no key', async () => {
    const res = await viewer.get(`${dataPath(stream)}?limit=3`);
    assert.equal(res.status, 200);
    assert.equal(res.body.length, 3);
  });

  test('POST: 403 without the key, 201 with it (public or not); the reading reads back', async () => {
    const name = stream.attributes.name;
    const timestamp = START - DAY;
    const denied = await device('POST', dataPath(stream), { timestamp, [name]: 200 });
    assert.equal(denied.status, 403);
    const viewerPost = await request(`${server.url}${dataPath(stream)}`, {
      method: 'POST',
      token: viewer.token,
      body: JSON.stringify({ timestamp, [name]: 200 }),
      headers: { 'Content-Type': 'application/json' },
    });
    assert.equal(viewerPost.status, 403, 'a bearer token does not replace the key for posting');
    const ok = await device('POST', dataPath(stream), { timestamp, [name]: 200 }, { private_key: key });
    assert.equal(ok.status, 201);
    assert.equal(ok.text, '');
    const back = await device('GET', dataPath(stream), undefined, { private_key: key, limit: 1, end: timestamp });
    assert.deepEqual(back.body, [{ timestamp, [name]: '200' }]);
    // Keys other than the stream's name are ignored, as in farmOS.
    const extra = await device(
      'POST',
      dataPath(stream),
      { timestamp: timestamp - 1, [name]: 201, value: 'string' },
      { private_key: key },
    );
    assert.equal(extra.status, 201);
    const again = await device('GET', dataPath(stream), undefined, { private_key: key, limit: 1, end: timestamp - 1 });
    assert.deepEqual(again.body, [{ timestamp: timestamp - 1, [name]: '201' }]);
  });

  test('timestamps as RFC 3339 strings or missing (the time of the post); values as numeric strings and decimals', async () => {
    const s = await newStream();
    const name = s.attributes.name;
    const k = s.attributes.private_key;
    const before = Math.floor(Date.now() / 1000);
    assert.equal(
      (
        await device('POST', dataPath(s), [{ timestamp: '2024-05-01T08:00:00Z', [name]: '76.5' }, { [name]: -0.25 }], {
          private_key: k,
        })
      ).status,
      201,
    );
    const got = await device('GET', dataPath(s), undefined, { private_key: k });
    assert.equal(got.body.length, 2);
    assert.ok(
      got.body[0].timestamp >= before && got.body[0].timestamp <= before + 60,
      'a point without timestamp is taken now',
    );
    assert.equal(got.body[0][name], '-0.25');
    assert.deepEqual(got.body[1], { timestamp: 1714550400, [name]: '76.5' });
  });

  test('as farmOS (Basic::storageSave): non-numeric values are skipped and the numeric ones stored, 201', async () => {
    const s = await newStream();
    const name = s.attributes.name;
    const k = s.attributes.private_key;
    const post = [
      { timestamp: START, [name]: 1 },
      { timestamp: START + 1, [name]: 'warm' },
      { timestamp: START + 2, [name]: true },
      { timestamp: START + 3, [name]: null },
      { timestamp: START + 4, [name]: { value: 5 } },
      { timestamp: START + 5, [name]: '6.5' },
    ];
    const res = await device('POST', dataPath(s), post, { private_key: k });
    assert.equal(res.status, 201, res.text);
    const got = await device('GET', dataPath(s), undefined, { private_key: k });
    assert.deepEqual(got.body, [
      { timestamp: START + 5, [name]: '6.5' },
      { timestamp: START, [name]: '1' },
    ]);
    const none = await device('POST', dataPath(s), { timestamp: START + 9, [name]: 'n/a' }, { private_key: k });
    assert.equal(none.status, 201, 'a post with nothing numeric is still a 201, as in farmOS');
    assert.equal(await readingCount(s.id), 2);
  });

  test('as farmOS: an empty or unreadable timestamp falls back to the time of the post, 201', async () => {
    const s = await newStream();
    const name = s.attributes.name;
    const k = s.attributes.private_key;
    const before = Math.floor(Date.now() / 1000);
    for (const timestamp of ['yesterday-ish nonsense', 1e15, 0, '0', '', null, false, { at: 1 }]) {
      const res = await device('POST', dataPath(s), { timestamp, [name]: 7 }, { private_key: k });
      assert.equal(res.status, 201, `${JSON.stringify(timestamp)}: ${res.text}`);
    }
    const after = Math.floor(Date.now() / 1000);
    const got = await device('GET', dataPath(s), undefined, { private_key: k });
    assert.equal(got.body.length, 8);
    for (const point of got.body)
      assert.ok(point.timestamp >= before && point.timestamp <= after + 1, JSON.stringify(point));
  });

  test('PUT, PATCH and DELETE are 405', async () => {
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const res = await device(method, dataPath(stream), undefined, { private_key: key });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'GET, POST');
      assert.equal(res.body.errors[0].status, '405');
    }
  });

  test('deleting the data stream deletes its readings', async () => {
    const s = await newStream();
    await device(
      'POST',
      dataPath(s),
      [
        { timestamp: START, [s.attributes.name]: 1 },
        { timestamp: START + 1, [s.attributes.name]: 2 },
      ],
      { private_key: s.attributes.private_key },
    );
    assert.equal(await readingCount(s.id), 2);
    assert.equal((await admin.delete(`/api/data_stream/basic/${s.id}`)).status, 204);
    assert.equal(await readingCount(s.id), 0);
    assert.equal((await device('GET', dataPath(s), undefined, { private_key: s.attributes.private_key })).status, 404);
  });
});

describe('bad input: a clear error, never a 500, and nothing written', () => {
  let stream: any;
  let name: string;
  let key: string;
  before(async () => {
    stream = await newStream();
    name = stream.attributes.name;
    key = stream.attributes.private_key;
  });

  const cases: Array<[string, () => unknown, number, RegExp, string | undefined]> = [
    [
      'a point that is not an object',
      () => [{ timestamp: START, [name]: 1 }, 42],
      400,
      /point 1 .*not a JSON object/i,
      '/1',
    ],
    ['a JSON string', () => '"hello"', 400, /not a JSON object/, undefined],
    ['broken JSON', () => '{"timestamp": 1,', 400, /not valid JSON/, undefined],
    ['an empty body', () => '', 400, /empty/, undefined],
  ];
  for (const [what, body, status, detail, pointer] of cases) {
    test(`${what} → ${status}`, async () => {
      const res = await device('POST', dataPath(stream), body(), { private_key: key });
      assert.equal(res.status, status, res.text);
      assert.match(res.body.errors[0].detail, detail);
      if (pointer) assert.equal(res.body.errors[0].source.pointer, pointer.replace('NAME', name));
      assert.equal(await readingCount(stream.id), 0, 'nothing was written');
    });
  }

  test('a body over 4 MiB → 413', async () => {
    const huge = JSON.stringify(Array.from({ length: 120_000 }, (_, i) => ({ timestamp: START + i, [name]: 12.345 })));
    assert.ok(huge.length > 4 * 1024 * 1024);
    const res = await device('POST', dataPath(stream), huge, { private_key: key });
    assert.equal(res.status, 413);
    assert.match(res.body.errors[0].detail, /larger than 4 MiB/);
    assert.equal(await readingCount(stream.id), 0);
  });

  test('a wrong or missing key → 403, and nothing written', async () => {
    for (const query of [
      {},
      { private_key: '' },
      { private_key: `${key}x` },
      { private_key: key.toUpperCase() },
    ] as Array<Record<string, string>>) {
      const res = await device('POST', dataPath(stream), { [name]: 1 }, query);
      assert.equal(res.status, 403, JSON.stringify(query));
    }
    assert.equal(await readingCount(stream.id), 0);
  });

  test('bad query parameters → 400 naming them; limit over 100000 → 422 as in farmOS', async () => {
    for (const [param, value] of [
      ['start', 'yesterday'],
      ['end', '1.5'],
      ['limit', 'ten'],
      ['limit', '-1'],
      ['offset', '-5'],
    ]) {
      const res = await device('GET', dataPath(stream), undefined, { private_key: key, [param!]: value! });
      assert.equal(res.status, 400, `${param}=${value}`);
      assert.equal(res.body.errors[0].source.parameter, param);
    }
    const over = await device('GET', dataPath(stream), undefined, { private_key: key, limit: 100001 });
    assert.equal(over.status, 422);
    assert.equal(over.body.errors[0].source.parameter, 'limit');
  });

  test('an unknown or malformed UUID → 404', async () => {
    assert.equal(
      (
        await device('GET', '/api/data_stream/6f1c2d70-0a43-4c55-9a53-2d6a0c1a0001/data', undefined, {
          private_key: key,
        })
      ).status,
      404,
    );
    assert.equal((await device('POST', '/api/data_stream/nope/data', { [name]: 1 }, { private_key: key })).status, 404);
  });
});

/** farmOS's SensorDataApiTest, run against both sensor URLs. */
for (const [label, pathOf] of [
  ['/asset/{uuid}/data/basic', (sensor: any) => `/asset/${sensor.id}/data/basic`],
  [
    '/farm/sensor/listener/{public_key} (farmOS 2.x legacy listener)',
    (sensor: any) => `/farm/sensor/listener/${sensor.attributes.public_key}`,
  ],
] as const) {
  describe(`sensor data at ${label}`, () => {
    test('GET: 403 without the key; an empty list with it; public sensors need no key', async () => {
      const sensor = await admin.create('asset--sensor', { name: 'Probe' });
      const path = pathOf(sensor);
      assert.equal((await device('GET', path)).status, 403);
      const empty = await device('GET', path, undefined, { private_key: sensor.attributes.private_key });
      assert.equal(empty.status, 200);
      assert.deepEqual(empty.body, []);
      await admin.patch(`/api/asset/sensor/${sensor.id}`, {
        data: { type: 'asset--sensor', id: sensor.id, attributes: { public: true } },
      });
      const open = await device('GET', path);
      assert.equal(open.status, 200);
      assert.deepEqual(open.body, []);
    });

    test('POST creates a data stream per value name, linked to the sensor; later posts reuse them', async () => {
      const sensor = await admin.create('asset--sensor', { name: 'Weather station', public: true });
      const path = pathOf(sensor);
      const privateKey = sensor.attributes.private_key;
      assert.equal(
        (await device('POST', path, { test_1: 100, test_2: 200 })).status,
        403,
        'public does not matter for posting',
      );
      assert.equal((await device('POST', path, { test_1: 100, test_2: 200 }, { private_key: privateKey })).status, 201);
      const streams = async () =>
        (await admin.get(`/api/asset/sensor/${sensor.id}?include=data_stream`)).body.included ?? [];
      const first = await streams();
      assert.deepEqual(first.map((s: any) => s.attributes.name).sort(), ['test_1', 'test_2']);
      assert.ok(
        first.every((s: any) => s.type === 'data_stream--basic' && /^[0-9a-f]{32}$/.test(s.attributes.private_key)),
      );
      assert.equal((await device('GET', path)).body.length, 2);

      assert.equal((await device('POST', path, { test_1: 101, test_2: 201 }, { private_key: privateKey })).status, 201);
      assert.deepEqual(
        (await streams()).map((s: any) => s.id).sort(),
        first.map((s: any) => s.id).sort(),
        'no new streams',
      );
      const all = await device('GET', path);
      assert.equal(all.body.length, 4);
      // Arrays of points with timestamps; readings of every stream, newest first; name narrows.
      const t = START;
      assert.equal(
        (
          await device(
            'POST',
            path,
            [
              { timestamp: t, test_1: 1, humidity: 60 },
              { timestamp: t + 60, test_1: 2 },
            ],
            { private_key: privateKey },
          )
        ).status,
        201,
      );
      const ranged = await device('GET', path, undefined, { start: t, end: t + 3600 });
      assert.equal(ranged.body.length, 3);
      assert.deepEqual(ranged.body[0], { timestamp: t + 60, test_1: '2' });
      assert.deepEqual(
        ranged.body.slice(1).sort((a: any, b: any) => Object.keys(a)[1]!.localeCompare(Object.keys(b)[1]!)),
        [
          { timestamp: t, humidity: '60' },
          { timestamp: t, test_1: '1' },
        ],
      );
      const named = await device('GET', path, undefined, { start: t, end: t + 3600, name: 'humidity' });
      assert.deepEqual(named.body, [{ timestamp: t, humidity: '60' }]);
      assert.equal((await streams()).length, 3);
    });

    test('as farmOS: non-numeric values are skipped, numeric ones stored; a stream for every value name, numeric or not', async () => {
      const sensor = await admin.create('asset--sensor', { name: 'Flaky probe' });
      const path = pathOf(sensor);
      const privateKey = sensor.attributes.private_key;
      const res = await device(
        'POST',
        path,
        [
          { timestamp: START, soil: 20, state: 'ok' },
          { timestamp: START + 1, soil: 'wet' },
          { timestamp: 'garbled', soil: 21 },
        ],
        { private_key: privateKey },
      );
      assert.equal(res.status, 201, res.text);
      const after = await admin.get(`/api/asset/sensor/${sensor.id}?include=data_stream`);
      assert.deepEqual(
        (after.body.included ?? []).map((st: any) => st.attributes.name).sort(),
        ['soil', 'state'],
        'as farmOS (getUniqueNamedValues): every name gets a stream',
      );
      const got = await device('GET', path, undefined, { private_key: privateKey });
      assert.equal(got.body.length, 2);
      assert.deepEqual(got.body[1], { timestamp: START, soil: '20' });
      assert.equal(got.body[0].soil, '21');
      assert.ok(got.body[0].timestamp > START + DAY, 'the garbled timestamp became the time of the post');
      assert.equal((await device('POST', path, { soil: 1 }, { private_key: 'wrong' })).status, 403);
    });
  });
}

test('an unknown public key → 404', async () => {
  const res = await device('GET', '/farm/sensor/listener/0123456789abcdef0123456789abcdef', undefined, {
    private_key: 'x',
  });
  assert.equal(res.status, 404);
  assert.equal(res.body.errors[0].status, '404');
});
