// The farmOS 4.x shape beside the 2.x shape (issue 39): one farm, one set of records and tokens,
// served on /api as farmOS 2.x serves it and on a second port (TILTH_API4_PORT) or a host name
// (TILTH_API4_HOSTS) as farmOS 4.x does. Golden files (test/fixtures/shapes/) hold one record of
// each row of the table read in each shape; writes cross over; filters, ETags and the
// change feed hold in both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api } from '../support/fixtures.ts';
import { ROOT } from '../support/project.ts';

let server: TestServer;
/** The farmOS 2.x shape (/api on TILTH_BASE_URL) and the 4.x shape (TILTH_API4_PORT), one token. */
let v2: Api;
let v4: Api;
let base4: string;
let token: string;

const HOST4 = 'v4.farm.test';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/** An animal's species, which every animal needs. */
let breed: { data: { type: string; id: string } };

before(async () => {
  const port = await freePort();
  base4 = `http://127.0.0.1:${port}`;
  const started = await startTestServerAsAdmin({
    env: { TILTH_API4_PORT: String(port), TILTH_API4_BASE_URL: base4, TILTH_API4_HOSTS: HOST4 },
  });
  server = started.server;
  token = started.token;
  v2 = new Api(server.url, token);
  v4 = new Api(base4, token);
  const term = await v2.create('taxonomy_term--animal_type', { name: 'Jersey' });
  breed = { data: { type: term.type, id: term.id } };
});
after(() => server.close());

const GOLDEN = join(ROOT, 'test', 'fixtures', 'shapes');

/** A resource object with what differs between runs (ids, times, bases) replaced by placeholders. */
function normalised(resource: any, ids: Map<string, string>): unknown {
  const text = JSON.stringify(resource)
    .replaceAll(server.url, '{base2}')
    .replaceAll(base4, '{base4}')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, (uuid) => {
      if (!ids.has(uuid)) ids.set(uuid, `{uuid${ids.size + 1}}`);
      return ids.get(uuid)!;
    })
    .replace(/"(drupal_internal__(?:revision_)?(?:id|target_id)|target_revision_id)":\d+/g, '"$1":0');
  return JSON.parse(text, (key, value) =>
    typeof value === 'string' &&
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(value) &&
    ['created', 'changed', 'revision_created'].includes(key)
      ? '{time}'
      : value,
  );
}

/** Compare one record's document in both shapes with its golden file (UPDATE_GOLDEN=1 writes it). */
async function golden(name: string, path: string): Promise<void> {
  const ids = new Map<string, string>();
  const shapes = {
    farmos2: normalised((await v2.get(path)).body.data, ids),
    farmos4: normalised((await v4.get(path)).body.data, ids),
  };
  const file = join(GOLDEN, `${name}.json`);
  if (process.env.UPDATE_GOLDEN === '1' || !existsSync(file)) {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(file, `${JSON.stringify(shapes, null, 2)}\n`);
    if (process.env.UPDATE_GOLDEN !== '1')
      assert.fail(`${file} was missing and has been written: check it and run again`);
  }
  assert.deepEqual(
    shapes,
    JSON.parse(readFileSync(file, 'utf8')),
    `${name} reads as test/fixtures/shapes/${name}.json says`,
  );
}

/** A request to the main port naming another host (fetch will not send a Host header of ours). */
function viaHost(path: string, post?: unknown): Promise<{ status: number; body: any }> {
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: post === undefined ? 'GET' : 'POST',
        headers: {
          Host: `${HOST4}:${url.port}`,
          Authorization: `Bearer ${token}`,
          Accept: 'application/vnd.api+json',
          ...(post === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(post === undefined ? undefined : JSON.stringify(post));
  });
}

test('/api in the 4.x shape lists the same resources on its own base and says 4.x; /api on the main base is unchanged', async () => {
  const two = (await v2.get('/api')).body;
  const four = (await v4.get('/api')).body;
  assert.equal(two.meta.farm.version, '2.x');
  assert.equal(four.meta.farm.version, '4.x');
  assert.equal(four.meta.farm.url, base4);
  assert.deepEqual(Object.keys(four.links).sort(), Object.keys(two.links).sort(), 'the same resource types');
  for (const [type, link] of Object.entries<any>(four.links))
    assert.ok(link.href.startsWith(`${base4}/`), `${type}'s link is on the 4.x base: ${link.href}`);
  assert.equal(four.meta.links.me.href, `${base4}/api/user/user/${two.meta.links.me.meta.id}`);
  const byHost = await viaHost('/api');
  assert.equal(byHost.body.meta.farm.version, '4.x', 'a host of TILTH_API4_HOSTS is answered in the 4.x shape');
  assert.equal(byHost.body.links.self.href, `http://${HOST4}:${new URL(server.url).port}/api`, 'on the host it named');
});

test("golden: an asset's status and archived time; an animal's sterility; a log's status and timestamp, in each shape", async () => {
  const land = (
    await v2.post('/api/asset/land', {
      data: {
        type: 'asset--land',
        attributes: {
          name: 'North field',
          land_type: 'field',
          status: 'archived',
          archived: '2024-03-01T00:00:00+00:00',
        },
      },
    })
  ).body.data;
  await golden('asset-archived', `/api/asset/land/${land.id}`);
  const animal = await v2.create(
    'asset--animal',
    {
      name: 'Bess',
      is_castrated: true,
      birthdate: '2023-04-01T00:00:00+00:00',
    },
    { animal_type: breed },
  );
  await golden('animal-sterile', `/api/asset/animal/${animal.id}`);
  const log = await v4.create('log--activity', {
    name: 'Mend fence',
    timestamp: '2024-05-01T08:00:00+00:00',
    status: 'abandoned',
  });
  await golden('log-abandoned', `/api/log/activity/${log.id}`);
});

test('{"archived": true} in the 4.x shape reads as status archived in the 2.x shape, with the time of the write; false makes it active again', async () => {
  const asset = await v2.create('asset--equipment', { name: 'Old tractor' });
  const four = (await v4.get(`/api/asset/equipment/${asset.id}`)).body.data.attributes;
  assert.equal(four.archived, false);
  assert.equal(four.last_archived, null);
  assert.ok(!('status' in four), 'the 4.x shape has no status');

  const before = Date.now() - 1000;
  const patched = await v4.patch(`/api/asset/equipment/${asset.id}`, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { archived: true } },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.data.attributes.archived, true);
  const two = (await v2.get(`/api/asset/equipment/${asset.id}`)).body.data.attributes;
  assert.equal(two.status, 'archived');
  assert.ok(Date.parse(two.archived) >= before, `archived now: ${two.archived}`);
  assert.equal(patched.body.data.attributes.last_archived, two.archived, '4.x last_archived is 2.x archived');

  const back = await v2.patch(`/api/asset/equipment/${asset.id}`, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { status: 'active' } },
  });
  assert.equal(back.status, 200);
  const again = (await v4.get(`/api/asset/equipment/${asset.id}`)).body.data.attributes;
  assert.deepEqual([again.archived, again.last_archived], [false, null], 'a 2.x status write reads in 4.x');

  const dated = await v4.patch(`/api/asset/equipment/${asset.id}`, {
    data: {
      type: 'asset--equipment',
      id: asset.id,
      attributes: { archived: true, last_archived: '2020-01-02T03:04:05+00:00' },
    },
  });
  assert.equal(dated.body.data.attributes.last_archived, '2020-01-02T03:04:05+00:00', 'last_archived given is kept');
  const off = await v4.patch(`/api/asset/equipment/${asset.id}`, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { archived: false } },
  });
  assert.equal((await v2.get(`/api/asset/equipment/${asset.id}`)).body.data.attributes.status, 'active');
  assert.equal(off.body.data.attributes.last_archived, null);

  const bad = await v4.patch(`/api/asset/equipment/${asset.id}`, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { archived: 'archived' } },
  });
  assert.equal(bad.status, 422);
  assert.equal(bad.body.errors[0].source.pointer, '/data/attributes/archived');
  assert.match(bad.body.errors[0].detail, /archived: "archived" is not a boolean/);
});

test('filter[archived]=1 in the 4.x shape finds what filter[status]=archived finds in the 2.x shape, in every form; last_archived sorts', async () => {
  for (const [name, archived] of [
    ['Shed A', true],
    ['Shed B', false],
    ['Shed C', true],
  ] as const)
    await v4.create('asset--structure', { name, structure_type: 'building', archived });
  const ids = (res: any) => res.body.data.map((r: any) => r.id).sort();
  const archived2 = ids(await v2.get('/api/asset/structure?filter[status]=archived'));
  const active2 = ids(await v2.get('/api/asset/structure?filter[status]=active'));
  assert.equal(archived2.length, 2);
  assert.deepEqual(ids(await v4.get('/api/asset/structure?filter[archived]=1')), archived2);
  assert.deepEqual(ids(await v4.get('/api/asset/structure?filter[archived]=true')), archived2);
  assert.deepEqual(ids(await v4.get('/api/asset/structure?filter[archived]=0')), active2);
  assert.deepEqual(
    ids(
      await v4.get(
        '/api/asset/structure?filter[a][condition][path]=archived&filter[a][condition][operator]=<>&filter[a][condition][value]=0',
      ),
    ),
    archived2,
  );
  assert.deepEqual(
    ids(
      await v4.get(
        '/api/asset/structure?filter[a][condition][path]=archived&filter[a][condition][operator]=IN&filter[a][condition][value][]=1',
      ),
    ),
    archived2,
  );
  const bad = await v4.get('/api/asset/structure?filter[archived]=maybe');
  assert.equal(bad.status, 400);
  assert.match(bad.body.errors[0].detail, /true or false/);
  const sorted = await v4.get('/api/asset/structure?filter[archived]=1&sort=-last_archived');
  assert.equal(sorted.status, 200, sorted.text);
  const times = sorted.body.data.map((r: any) => r.attributes.last_archived);
  assert.deepEqual(times, [...times].sort().reverse());
  const sparse = await v4.get('/api/asset/structure?filter[archived]=1&fields[asset--structure]=archived,name');
  assert.deepEqual(Object.keys(sparse.body.data[0].attributes).sort(), ['archived', 'name']);
  assert.equal(sparse.body.data[0].attributes.archived, true);
});

test('is_sterile written through one shape reads through the other, under its name there; both names are accepted in both', async () => {
  const animal = (
    await v4.post('/api/asset/animal', {
      data: {
        type: 'asset--animal',
        attributes: { name: 'Rex', is_sterile: true, birthdate: '2022-01-01T00:00:00+00:00' },
        relationships: { animal_type: breed },
      },
    })
  ).body.data;
  assert.equal(animal.attributes.is_sterile, true);
  assert.ok(!('is_castrated' in animal.attributes));
  assert.equal((await v2.get(`/api/asset/animal/${animal.id}`)).body.data.attributes.is_castrated, true);
  await v2.patch(`/api/asset/animal/${animal.id}`, {
    data: { type: 'asset--animal', id: animal.id, attributes: { is_sterile: false } },
  });
  assert.equal((await v4.get(`/api/asset/animal/${animal.id}`)).body.data.attributes.is_sterile, false);
  await v4.patch(`/api/asset/animal/${animal.id}`, {
    data: { type: 'asset--animal', id: animal.id, attributes: { is_castrated: true } },
  });
  assert.equal((await v2.get(`/api/asset/animal/${animal.id}`)).body.data.attributes.is_castrated, true);
  const found = await v4.get('/api/asset/animal?filter[is_sterile]=1');
  assert.ok(found.body.data.some((r: any) => r.id === animal.id));
});

test('a 4.x log without a timestamp is stamped now and is done by default; an abandoned log reads as done in 2.x and survives 2.x writes', async () => {
  const before = Math.floor(Date.now() / 1000);
  const missing = await v4.post('/api/log/activity', {
    data: { type: 'log--activity', attributes: { name: 'No time' } },
  });
  // farmOS 4.x's schema requires the timestamp, yet it stores such a log at the request's time
  // (farmOS.py 2.0's functional tests, run against farmOS 4.x, post logs without one).
  assert.equal(missing.status, 201, JSON.stringify(missing.body));
  const stamped = Date.parse(missing.body.data.attributes.timestamp) / 1000;
  assert.ok(stamped >= before - 1 && stamped <= Math.floor(Date.now() / 1000) + 1, 'stamped now');
  const sentNull = await v4.post('/api/log/activity', {
    data: { type: 'log--activity', attributes: { name: 'Null time', timestamp: null } },
  });
  assert.equal(sentNull.status, 422, 'sent as null it is refused');
  assert.equal(sentNull.body.errors[0].source.pointer, '/data/attributes/timestamp');
  const two = await v2.post('/api/log/activity', { data: { type: 'log--activity', attributes: { name: 'No time' } } });
  assert.equal(two.status, 201, 'the 2.x shape still fills it in');
  assert.equal(two.body.data.attributes.status, 'pending', 'and is pending by default');

  const done = await v4.create('log--activity', { name: 'Defaults', timestamp: '2024-06-01T00:00:00+00:00' });
  assert.equal(done.attributes.status, 'done', '4.x: done when no status is sent');

  const log = await v4.create('log--activity', {
    name: 'Gave up',
    timestamp: '2024-06-01T00:00:00+00:00',
    status: 'abandoned',
  });
  assert.equal((await v2.get(`/api/log/activity/${log.id}`)).body.data.attributes.status, 'done');
  // A 2.x PATCH of its name, then one echoing the status it read, leave it abandoned.
  await v2.patch(`/api/log/activity/${log.id}`, {
    data: { type: 'log--activity', id: log.id, attributes: { name: 'Gave up, truly' } },
  });
  const echo = await v2.patch(`/api/log/activity/${log.id}`, {
    data: { type: 'log--activity', id: log.id, attributes: { status: 'done' } },
  });
  assert.equal(echo.status, 200);
  const four = (await v4.get(`/api/log/activity/${log.id}`)).body.data.attributes;
  assert.deepEqual([four.name, four.status], ['Gave up, truly', 'abandoned']);
  const refused = await v2.patch(`/api/log/activity/${log.id}`, {
    data: { type: 'log--activity', id: log.id, attributes: { status: 'abandoned' } },
  });
  assert.equal(refused.status, 422);
  assert.equal(refused.body.errors[0].source.pointer, '/data/attributes/status');
  // 2.x filters see it as done, never as pending (not a task, not late).
  const doneIds = (await v2.get('/api/log/activity?filter[status]=done&page[limit]=50')).body.data.map(
    (r: any) => r.id,
  );
  const pendingIds = (await v2.get('/api/log/activity?filter[status]=pending&page[limit]=50')).body.data.map(
    (r: any) => r.id,
  );
  assert.ok(doneIds.includes(log.id));
  assert.ok(!pendingIds.includes(log.id));
  const abandoned = (await v4.get('/api/log/activity?filter[status]=abandoned')).body.data.map((r: any) => r.id);
  assert.deepEqual(abandoned.includes(log.id), true);
  // Pending again through 2.x: a real change of what 2.x reads.
  await v2.patch(`/api/log/activity/${log.id}`, {
    data: { type: 'log--activity', id: log.id, attributes: { status: 'pending' } },
  });
  assert.equal((await v4.get(`/api/log/activity/${log.id}`)).body.data.attributes.status, 'pending');
});

test("an ETag from one shape is the other's too: If-Match from 2.x works in 4.x, and a stale one is refused in either", async () => {
  const asset = await v2.create('asset--water', { name: 'Pond' });
  const got2 = await v2.get(`/api/asset/water/${asset.id}`);
  const got4 = await v4.get(`/api/asset/water/${asset.id}`);
  assert.equal(got2.headers.get('etag'), got4.headers.get('etag'), 'one record, one version');
  const tag = got2.headers.get('etag')!;
  const ok = await v4.patch(
    `/api/asset/water/${asset.id}`,
    { data: { type: 'asset--water', id: asset.id, attributes: { archived: true } } },
    { 'If-Match': tag },
  );
  assert.equal(ok.status, 200, ok.text);
  const stale = await v2.patch(
    `/api/asset/water/${asset.id}`,
    { data: { type: 'asset--water', id: asset.id, attributes: { name: 'Lake' } } },
    { 'If-Match': tag },
  );
  assert.equal(stale.status, 412);
  const fresh = await v2.patch(
    `/api/asset/water/${asset.id}`,
    { data: { type: 'asset--water', id: asset.id, attributes: { name: 'Lake' } } },
    { 'If-Match': ok.headers.get('etag')! },
  );
  assert.equal(fresh.status, 200);
});

test("the change feed gives each record in the caller's shape, with links on the caller's base", async () => {
  const asset = await v4.create('asset--compost', { name: 'Heap', archived: true });
  const feed = async (api: Api, base: string) => {
    const res = await api.get('/api/changes?since=0&filter[type]=asset--compost&include=records');
    assert.equal(res.status, 200, res.text);
    assert.ok(res.body.links.self.href.startsWith(`${base}/api/changes?`), res.body.links.self.href);
    return res.body.included.find((r: any) => r.id === asset.id);
  };
  const four = await feed(v4, base4);
  const two = await feed(v2, server.url);
  assert.equal(four.attributes.archived, true);
  assert.ok(!('status' in four.attributes));
  assert.equal(two.attributes.status, 'archived');
  assert.equal(two.attributes.archived, four.attributes.last_archived);
  assert.ok(four.links.self.href.startsWith(`${base4}/api/asset/compost/`));
});

test("a 4.x collection's links stay on the 4.x base, and a client that joins links.next's path onto its base gets the next page", async () => {
  for (let i = 0; i < 3; i++) await v4.create('asset--group', { name: `Seed ${i}`, archived: false });
  const first = await v4.get('/api/asset/group?page[limit]=2&filter[archived]=0');
  const next = first.body.links.next.href as string;
  assert.ok(next.startsWith(`${base4}/api/asset/group?`), next);
  // farmOS.py 2.0: only the path and query of links.next, joined onto its hostname.
  const url = new URL(next);
  const second = await v4.get(`${url.pathname}${url.search}`);
  assert.equal(second.status, 200);
  assert.ok(second.body.data.length >= 1);
  assert.equal(second.body.data[0].attributes.archived, false);
});

test('a subrequests call through a host name of TILTH_API4_HOSTS runs its sub-requests in the 4.x shape, on that host', async () => {
  const land = await v2.create('asset--land', { name: 'Host field', land_type: 'field', status: 'archived' });
  const blueprint = [
    { requestId: 'read', action: 'view', uri: `/api/asset/land/${land.id}` },
    // A client's own try at naming a host for the sub-requests counts for nothing.
    {
      requestId: 'spoofed',
      action: 'view',
      uri: `/api/asset/land/${land.id}`,
      headers: { 'X-Tilth-Call-Host': 'elsewhere.test', 'X-Tilth-Loopback': 'guess' },
    },
  ];
  const port = new URL(server.url).port;
  const call = await viaHost('/subrequests?_format=json', blueprint);
  assert.equal(call.status, 200, JSON.stringify(call.body));
  for (const id of ['read', 'spoofed']) {
    const body = JSON.parse(call.body[id].body);
    assert.equal(body.data.attributes.archived, true, `${id}: 4.x's archived, not 2.x's status`);
    assert.equal(body.data.attributes.status, undefined, `${id}: no 2.x status`);
    assert.equal(
      body.links.self.href,
      `http://${HOST4}:${port}/api/asset/land/${land.id}`,
      `${id}: on the call's host`,
    );
  }
  // The same call on the main host stays 2.x.
  const two = await v2.post('/subrequests?_format=json', blueprint.slice(0, 1));
  assert.equal(JSON.parse(two.body.read.body).data.attributes.status, 'archived');
});
