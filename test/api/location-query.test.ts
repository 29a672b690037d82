// Location you can query (farm records issue, item 7): `filter[location.id]`, `filter[location.name]`
// and `sort=location.name` on asset collections, "which assets were in X at time T" with `as_of`,
// future moves that take effect with no write, and group moves and deletes kept in step.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

type Ref = { type: string; id: string };
const post = async (path: string, data: unknown) => {
  const res = await request(`${server.url}${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, res.text);
  return res.body.data;
};
const list = async (path: string): Promise<string[]> => {
  const res = await request(`${server.url}${path}`, { token });
  assert.equal(res.status, 200, res.text);
  return res.body.data.map((r: { attributes: { name: string } }) => r.attributes.name);
};
const ref = (r: { type: string; id: string }): Ref => ({ type: r.type, id: r.id });
let species: Ref | undefined;
/** An animal (of one species, which farmOS requires). */
const animal = async (name: string): Promise<Ref> => {
  species ??= ref(
    await post('/api/taxonomy_term/animal_type', {
      type: 'taxonomy_term--animal_type',
      attributes: { name: 'Cattle' },
    }),
  );
  return ref(
    await post('/api/asset/animal', {
      type: 'asset--animal',
      attributes: { name },
      relationships: { animal_type: { data: species } },
    }),
  );
};
const NOW = Math.floor(Date.now() / 1000);
const DAY = 86_400;

const move = (assets: Ref[], to: Ref[], timestamp: number, status = 'done') =>
  post('/api/log/activity', {
    type: 'log--activity',
    attributes: { timestamp, status, is_movement: true },
    relationships: { asset: { data: assets }, location: { data: to } },
  });

test('filter and sort assets by where they are, now and at a past or future time', async () => {
  const north = ref(
    await post('/api/asset/land', { type: 'asset--land', attributes: { name: 'North paddock', land_type: 'paddock' } }),
  );
  const south = ref(
    await post('/api/asset/land', { type: 'asset--land', attributes: { name: 'South paddock', land_type: 'paddock' } }),
  );
  const barn = ref(
    await post('/api/asset/structure', {
      type: 'asset--structure',
      attributes: { name: 'Barn', structure_type: 'building' },
    }),
  );
  const [dolly, molly, polly] = [await animal('Dolly'), await animal('Molly'), await animal('Polly')];
  await animal('Holly'); // never moved

  await move([dolly, molly], [north], NOW - 10 * DAY);
  await move([polly], [south], NOW - 10 * DAY);
  await move([molly], [barn], NOW - 5 * DAY);
  await move([dolly], [south], NOW - DAY, 'pending'); // does not count
  await move([polly], [barn], NOW + 30 * DAY); // not yet

  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${north.id}&sort=name`), ['Dolly']);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.name]=Barn&sort=name`), ['Molly']);
  assert.deepEqual(
    await list(
      `/api/asset/animal?filter[loc][condition][path]=location.name&filter[loc][condition][operator]=STARTS_WITH&filter[loc][condition][value]=South`,
    ),
    ['Polly'],
  );
  assert.deepEqual(
    await list(`/api/asset/animal?filter[location.id][operator]=IS NULL&sort=name`),
    ['Holly'],
    'an asset never moved is nowhere',
  );
  assert.deepEqual(
    await list(`/api/asset/animal?filter[location.id][operator]=<>&filter[location.id][value]=${north.id}&sort=name`),
    ['Holly', 'Molly', 'Polly'],
  );
  // Combined with another filter, and sorted by location name (assets nowhere first on SQLite, last on PostgreSQL).
  const sorted = await list(
    `/api/asset/animal?filter[status]=active&filter[location.id][operator]=IS NOT NULL&sort=location.name,name`,
  );
  assert.deepEqual(sorted, ['Molly', 'Dolly', 'Polly'], 'Barn, North paddock, South paddock');
  assert.deepEqual(await list(`/api/asset/animal?filter[status]=archived&filter[location.id]=${north.id}`), []);

  // Which assets were in the north paddock six days ago, and where will they be in a month?
  const sixDaysAgo = new Date((NOW - 6 * DAY) * 1000).toISOString();
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${north.id}&sort=name&as_of=${sixDaysAgo}`), [
    'Dolly',
    'Molly',
  ]);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${north.id}&sort=name&as_of=${NOW - 4 * DAY}`), [
    'Dolly',
  ]);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${barn.id}&sort=name&as_of=${NOW + 31 * DAY}`), [
    'Molly',
    'Polly',
  ]);
  assert.deepEqual(
    await list(`/api/asset/animal?filter[location.id]=${north.id}&as_of=${NOW - 11 * DAY}`),
    [],
    'before any move',
  );
  const then = await request(`${server.url}/api/asset/animal/${molly.id}`, { token });
  assert.deepEqual(
    then.body.data.relationships.location.data.map((r: Ref) => r.id),
    [barn.id],
  );
  const past = await request(`${server.url}/api/asset/animal?filter[name]=Molly&as_of=${sixDaysAgo}`, { token });
  assert.deepEqual(
    past.body.data[0].relationships.location.data.map((r: Ref) => r.id),
    [north.id],
    'the computed field follows as_of too',
  );
  // So do the included records' (Molly's moves, with Molly included: where she was then, and now).
  const included = async (asOf: string) => {
    const res = await request(`${server.url}/api/log/activity?filter[asset.id]=${molly.id}&include=asset${asOf}`, {
      token,
    });
    assert.equal(res.status, 200, res.text);
    return res.body.included.find((r: Ref) => r.id === molly.id).relationships.location.data.map((r: Ref) => r.id);
  };
  assert.deepEqual(await included(`&as_of=${sixDaysAgo}`), [north.id], 'an included asset is where it was at as_of');
  assert.deepEqual(await included(''), [barn.id]);

  const bad = await request(`${server.url}/api/asset/animal?as_of=yesterday`, { token });
  assert.equal(bad.status, 400);
  assert.match(bad.body.errors[0].detail, /as_of/);
  assert.equal(bad.body.errors[0].source.parameter, 'as_of');

  // The filter agrees with the computed field for every asset.
  const all = await request(`${server.url}/api/asset/animal?page[limit]=50`, { token });
  for (const a of all.body.data as Array<{
    attributes: { name: string };
    relationships: { location: { data: Ref[] } };
  }>) {
    for (const l of a.relationships.location.data)
      assert.ok((await list(`/api/asset/animal?filter[location.id]=${l.id}`)).includes(a.attributes.name));
  }
});

test('a future-dated movement takes effect when its time comes, with no write', async () => {
  const pen = ref(
    await post('/api/asset/structure', {
      type: 'asset--structure',
      attributes: { name: 'Pen', structure_type: 'building' },
    }),
  );
  const calf = await animal('Calf');
  await move([calf], [pen], Math.floor(Date.now() / 1000) + 2);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${pen.id}`), []);
  await new Promise((r) => setTimeout(r, 3000));
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${pen.id}`), ['Calf']);
  const got = await request(`${server.url}/api/asset/animal/${calf.id}`, { token });
  assert.deepEqual(
    got.body.data.relationships.location.data.map((r: Ref) => r.id),
    [pen.id],
  );
});

test('group members move with their group, and stop when their assignment is deleted or they leave it', async () => {
  const east = ref(
    await post('/api/asset/land', { type: 'asset--land', attributes: { name: 'East field', land_type: 'field' } }),
  );
  const west = ref(
    await post('/api/asset/land', { type: 'asset--land', attributes: { name: 'West field', land_type: 'field' } }),
  );
  const herd = ref(await post('/api/asset/group', { type: 'asset--group', attributes: { name: 'Herd' } }));
  const cow = await animal('Cow');
  const bull = await animal('Bull');
  await move([cow, bull], [east], NOW - 10 * DAY);
  const join = await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { timestamp: NOW - 9 * DAY, status: 'done', is_group_assignment: true },
    relationships: { asset: { data: [cow, bull] }, group: { data: [herd] } },
  });
  await move([herd], [west], NOW - 8 * DAY);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${west.id}&sort=name`), ['Bull', 'Cow']);
  assert.deepEqual(
    await list(`/api/asset/animal?filter[location.id]=${east.id}&sort=name&as_of=${NOW - 8.5 * DAY}`),
    ['Bull', 'Cow'],
    'before the group moved',
  );

  // The bull leaves the herd and stays in the west field (one log that assigns and moves, as
  // farmOS's quick forms write it): the herd's later moves no longer take him.
  await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { timestamp: NOW - 7 * DAY, status: 'done', is_group_assignment: true, is_movement: true },
    relationships: { asset: { data: [bull] }, group: { data: [] }, location: { data: [west] } },
  });
  await move([herd], [east], NOW - 6 * DAY);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${east.id}&sort=name`), ['Cow']);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${west.id}&sort=name`), ['Bull']);

  // Editing the assignment log back-dates nothing new but is followed: it now names only the bull.
  const patched = await request(`${server.url}/api/log/activity/${join.id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'log--activity', id: join.id, relationships: { asset: { data: [bull] } } } },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.deepEqual(
    await list(`/api/asset/animal?filter[location.id]=${east.id}&sort=name`),
    ['Cow'],
    'the cow was moved there on her own first',
  );
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${west.id}&sort=name&as_of=${NOW - 7.5 * DAY}`), [
    'Bull',
  ]);

  // Leaving the group by deleting the assignment (the group itself is not deleted while logs name it): nobody moves with it any more.
  const rejoin = await post('/api/log/activity', {
    type: 'log--activity',
    attributes: { timestamp: NOW - 5 * DAY, status: 'done', is_group_assignment: true },
    relationships: { asset: { data: [cow, bull] }, group: { data: [herd] } },
  });
  assert.ok(rejoin.id);
  await move([herd], [west], NOW - 4 * DAY);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${west.id}&sort=name`), ['Bull', 'Cow']);
  const refused = await request(`${server.url}/api/asset/group/${herd.id}`, { method: 'DELETE', token });
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.errors[0].code, 'referenced');
  assert.equal((await request(`${server.url}/api/log/activity/${rejoin.id}`, { method: 'DELETE', token })).status, 204);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${east.id}&sort=name`), ['Cow']);
  assert.deepEqual(await list(`/api/asset/animal?filter[location.id]=${west.id}&sort=name`), ['Bull']);
});

test('an asset made fixed has no location, and regains it when made movable', async () => {
  const shed = ref(
    await post('/api/asset/structure', {
      type: 'asset--structure',
      attributes: { name: 'Shed', structure_type: 'building' },
    }),
  );
  const trailer = ref(
    await post('/api/asset/equipment', { type: 'asset--equipment', attributes: { name: 'Trailer' } }),
  );
  await move([trailer], [shed], NOW - DAY);
  assert.deepEqual(await list(`/api/asset/equipment?filter[location.id]=${shed.id}`), ['Trailer']);
  const patch = (is_fixed: boolean) =>
    request(`${server.url}/api/asset/equipment/${trailer.id}`, {
      method: 'PATCH',
      token,
      json: { data: { type: 'asset--equipment', id: trailer.id, attributes: { is_fixed } } },
    });
  assert.equal((await patch(true)).status, 200);
  assert.deepEqual(await list(`/api/asset/equipment?filter[location.id]=${shed.id}`), []);
  assert.equal((await patch(false)).status, 200);
  assert.deepEqual(await list(`/api/asset/equipment?filter[location.id]=${shed.id}`), ['Trailer']);
});

test('the location filter checks access like any relationship path', async () => {
  const res = await request(`${server.url}/api/asset/animal?filter[location.geometry]=x`, { token });
  assert.equal(res.status, 400, 'a computed field of the location is still refused');
  const unknown = await request(`${server.url}/api/asset/animal?filter[location.nonsense]=x`, { token });
  assert.equal(unknown.status, 400);
  assert.match(unknown.body.errors[0].detail, /nonsense/);
});

test('concurrent moves of one asset leave it where the latest one put it', async () => {
  const places: Ref[] = [];
  for (let i = 0; i < 4; i++)
    places.push(
      ref(
        await post('/api/asset/land', { type: 'asset--land', attributes: { name: `Strip ${i}`, land_type: 'field' } }),
      ),
    );
  const goat = await animal('Goat');
  // Twelve movement logs at once, each in its own transaction; the latest timestamp goes to strip 3.
  const moves = Array.from({ length: 12 }, (_, i) => ({
    to: places[i === 11 ? 3 : i % 3]!,
    at: NOW - 1000 + (i === 11 ? 500 : i),
  }));
  const results = await Promise.all(
    moves.map(({ to, at }) =>
      request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: {
          data: {
            type: 'log--activity',
            attributes: { timestamp: at, status: 'done', is_movement: true },
            relationships: { asset: { data: [goat] }, location: { data: [to] } },
          },
        },
      }),
    ),
  );
  const created = results.filter((r) => r.status === 201).length;
  assert.ok(
    results.every((r) => r.status === 201 || r.status === 503),
    results.map((r) => r.status).join(','),
  );
  assert.ok(created > 0);
  const expected = results[11]!.status === 201 ? 'Strip 3' : null;
  const served = await request(`${server.url}/api/asset/animal/${goat.id}?include=location`, { token });
  const names = served.body.included?.map((l: { attributes: { name: string } }) => l.attributes.name) ?? [];
  if (expected) assert.deepEqual(names, [expected]);
  // Whatever was acknowledged, the stored placement agrees with the logs it came from.
  assert.deepEqual(
    await list(`/api/asset/animal?filter[location.name]=${encodeURIComponent(names[0])}&filter[name]=Goat`),
    ['Goat'],
  );
});
