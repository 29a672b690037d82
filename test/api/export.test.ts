// Exports (operations issue, item 8): any collection the caller can read, with its filters and
// sorts, as CSV (related records as names and UUIDs), GeoJSON and KML, past the 50-record page.
// Exports a farmer can use (issue 29 Part B, item 4): a log's quantities as farmOS writes them in
// a CSV cell, no Drupal-internal columns, a byte order mark so spreadsheets read accents, and
// GeoJSON properties typed; the quantities loaded for a batch at once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let token: string;
let viewerToken: string;
const LOGS = 450; // more than two export batches
let field: { id: string };

before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
  await createUser(server.ctx.db.knex, { name: 'vi', password: 'vi-password', roles: ['farm_viewer'] });
  viewerToken = await passwordToken(server.url, 'vi', 'vi-password');
  const post = async (path: string, data: unknown) => {
    const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  field = await post('asset/land', {
    type: 'asset--land',
    attributes: {
      name: 'North field, upper',
      land_type: 'field',
      intrinsic_geometry: 'POLYGON ((-72.5 42.3, -72.4 42.3, -72.4 42.4, -72.5 42.3))',
    },
  });
  await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'Well', land_type: 'other', intrinsic_geometry: 'POINT (-72.45 42.35)' },
  });
  await post('asset/land', { type: 'asset--land', attributes: { name: '=cmd|calc', land_type: 'field' } });
  for (let i = 0; i < LOGS; i += 10) {
    await Promise.all(
      Array.from({ length: 10 }, (_, k) =>
        post('log/activity', {
          type: 'log--activity',
          attributes: {
            name: `Log ${String(i + k).padStart(4, '0')}`,
            status: (i + k) % 3 ? 'done' : 'pending',
            timestamp: 1700000000 + i + k,
          },
          relationships: { asset: { data: [{ type: 'asset--land', id: field.id }] } },
        }),
      ),
    );
  }
});
after(() => server.close());

const post = async (path: string, data: unknown) => {
  const res = await request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });
  assert.equal(res.status, 201, res.text);
  return res.body.data;
};

/** An export's bytes as the server sent them (fetch's text() drops a byte order mark). */
async function bytesOf(path: string): Promise<Buffer> {
  const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(res.status, 200);
  return Buffer.from(await res.arrayBuffer());
}

/** Every SQL statement the server runs while `run` runs, but the bearer check's token lookup. */
async function queriesOf(run: () => Promise<void>): Promise<string[]> {
  const knex = server.ctx.db.knex;
  const log: string[] = [];
  const listener = (q: { sql: string }) => log.push(q.sql);
  knex.on('query', listener);
  try {
    await run();
  } finally {
    knex.removeListener('query', listener);
  }
  return log.filter((sql) => !/\boauth_access_tokens\b/.test(sql));
}

/** A minimal CSV reader for the test (quoted cells, doubled quotes, CRLF rows). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') ((cell += '"'), i++);
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') (row.push(cell), (cell = ''));
    else if (c === '\r' && text[i + 1] === '\n') {
      (row.push(cell), rows.push(row), (row = []), (cell = ''), i++);
    } else cell += c;
  }
  return rows;
}

test('CSV: every matching record past the page limit, in order, related records as names and UUIDs', async () => {
  const res = await request(`${server.url}/api/log/activity?_format=csv&filter[status]=done&sort=-name`, { token });
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers.get('content-type')!, /^text\/csv/);
  assert.match(res.headers.get('content-disposition')!, /attachment; filename="log-activity\.csv"/);
  const [header, ...rows] = parseCsv(res.text);
  const done = Array.from({ length: LOGS }, (_, i) => i).filter((i) => i % 3);
  assert.equal(rows.length, done.length, 'all done logs, not a page of 50');
  const col = (name: string) => header!.indexOf(name);
  assert.ok(col('name') > 0 && col('asset') > 0 && col('asset.id') > 0 && col('timestamp') > 0, header!.join(','));
  assert.equal(rows[0]![col('name')], `Log ${String(done[done.length - 1]).padStart(4, '0')}`, 'sorted as asked');
  assert.equal(rows[0]![col('asset')], 'North field, upper', 'a name with a comma survives');
  assert.equal(rows[0]![col('asset.id')], field.id);
  const viaAccept = await request(`${server.url}/api/log/activity?filter[status]=pending`, {
    token,
    headers: { Accept: 'text/csv' },
  });
  assert.equal(parseCsv(viaAccept.text).length - 1, LOGS - done.length, 'Accept: text/csv works too');
});

test('CSV cells cannot smuggle spreadsheet formulas', async () => {
  const res = await request(`${server.url}/api/asset/land?_format=csv&filter[land_type]=field`, { token });
  assert.ok(res.text.includes('"\'=cmd|calc"'), 'a leading = is neutralised, and the text cell quoted');
  // After a separator a spreadsheet in another locale may split on, too.
  const notes = 'x;=1+1, @SUM(A1) |-cmd|calc; -5 kg, +3';
  const log = await request(`${server.url}/api/log/activity`, {
    method: 'POST',
    token,
    json: {
      data: {
        type: 'log--activity',
        attributes: { name: 'Formula notes', notes: { value: notes, format: 'plain_text' } },
      },
    },
  });
  assert.equal(log.status, 201, log.text);
  const csv = await request(`${server.url}/api/log/activity?_format=csv&filter[name]=Formula%20notes`, { token });
  assert.ok(csv.text.includes(`"x;'=1+1, '@SUM(A1) |'-cmd|calc; -5 kg, +3"`), csv.text.slice(0, 600));
  // Numbers stay numbers.
  assert.match(csv.text, /"log--activity",\d+,/, 'ids are bare numbers');
});

test('GeoJSON and KML: the records with a geometry, properties from their attributes', async () => {
  const geo = await request(`${server.url}/api/asset/land?_format=geojson&sort=name`, { token: viewerToken });
  assert.equal(geo.status, 200, geo.text);
  assert.match(geo.headers.get('content-type')!, /application\/geo\+json/);
  const collection = JSON.parse(geo.text);
  assert.equal(collection.type, 'FeatureCollection');
  assert.deepEqual(
    collection.features.map((f: any) => [f.properties.name, f.geometry.type]),
    [
      ['North field, upper', 'Polygon'],
      ['Well', 'Point'],
    ],
  );
  assert.deepEqual(collection.features[1].geometry.coordinates, [-72.45, 42.35]);
  const kml = await request(`${server.url}/api/asset/land?sort=name`, {
    token,
    headers: { Accept: 'application/vnd.google-earth.kml+xml' },
  });
  assert.equal(kml.status, 200);
  assert.equal((kml.text.match(/<Placemark /g) ?? []).length, 2);
  assert.match(
    kml.text,
    /<name>North field, upper<\/name>[\s\S]*<Polygon><outerBoundaryIs><LinearRing><coordinates>-72\.5,42\.3 /,
  );
  assert.match(kml.text, /<Point><coordinates>-72\.45,42\.35<\/coordinates><\/Point>/);
});

test('exports keep the API’s errors and access rules', async () => {
  assert.equal((await request(`${server.url}/api/log/activity?_format=csv`)).status, 401);
  const bad = await request(`${server.url}/api/log/activity?_format=xlsx`, { token });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.errors[0].source.parameter, '_format');
  const badFilter = await request(`${server.url}/api/log/activity?_format=csv&filter[nonsense]=1`, { token });
  assert.equal(badFilter.status, 400, 'a bad filter is a JSON:API error before any row is sent');
  const users = await request(`${server.url}/api/user/user?_format=csv`, { token: viewerToken });
  assert.ok(!users.text.includes('@'), 'private fields (e-mail addresses) stay private');
});

const NOISE = [
  'langcode',
  'default_langcode',
  'revision_translation_affected',
  'revision_default',
  'revision_created',
  'revision_user',
  'drupal_internal__revision_id',
];

test("CSV: a byte order mark for spreadsheets, accents intact, none of Drupal's internal columns", async () => {
  await post('asset/land', { type: 'asset--land', attributes: { name: 'Pré du moulin', land_type: 'field' } });
  const bytes = await bytesOf('/api/asset/land?_format=csv&sort=name');
  assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf], 'UTF-8 byte order mark first');
  const text = bytes.subarray(3).toString('utf8');
  assert.ok(text.includes('Pré du moulin'));
  const [header] = parseCsv(text);
  assert.deepEqual(header!.slice(0, 3), ['id', 'type', 'drupal_internal__id']);
  for (const column of NOISE) assert.ok(!header!.includes(column), `no ${column} column: ${header!.join(',')}`);
  for (const column of ['name', 'status', 'land_type', 'intrinsic_geometry', 'created', 'changed'])
    assert.ok(header!.includes(column), `a ${column} column`);
  const geo = await bytesOf('/api/asset/land?_format=geojson');
  assert.notEqual(geo[0], 0xef, 'GeoJSON has no byte order mark (RFC 7946 forbids one)');
});

test("CSV: a log's quantities as farmOS writes them (label (Measure) value units), loaded for a batch at once", async () => {
  const kg = await post('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'kg' } });
  const crates = await post('taxonomy_term/unit', { type: 'taxonomy_term--unit', attributes: { name: 'crates' } });
  let made = 0;
  const harvests = async (n: number) => {
    for (let i = 0; i < n; i++, made++) {
      const weight = await post('quantity/standard', {
        type: 'quantity--standard',
        attributes: { measure: 'weight', value: { decimal: `${12 + made}.5` }, label: 'picked' },
        relationships: { units: { data: { type: 'taxonomy_term--unit', id: kg.id } } },
      });
      const count = await post('quantity/standard', {
        type: 'quantity--standard',
        attributes: { measure: 'count', value: { decimal: '3' } },
        relationships: { units: { data: { type: 'taxonomy_term--unit', id: crates.id } } },
      });
      await post('log/harvest', {
        type: 'log--harvest',
        attributes: { name: `Harvest ${String(made).padStart(2, '0')}`, status: 'done', timestamp: 1700000000 + made },
        relationships: {
          quantity: {
            data: [
              { type: 'quantity--standard', id: weight.id },
              { type: 'quantity--standard', id: count.id },
            ],
          },
          location: { data: [{ type: 'asset--land', id: field.id }] },
        },
      });
    }
  };
  const exportOf = async () => {
    let text = '';
    const queries = await queriesOf(async () => {
      text = (await request(`${server.url}/api/log/harvest?_format=csv&sort=name`, { token })).text;
    });
    return { rows: parseCsv(text), queries };
  };
  await harvests(5);
  const five = await exportOf();
  const [header, first] = five.rows;
  const col = (name: string) => header!.indexOf(name);
  assert.equal(first![col('name')], 'Harvest 00');
  assert.equal(
    first![col('quantity')],
    'picked (Weight) 12.5 kg, (Count) 3 crates',
    'each quantity: its label, (its measure), its value and units',
  );
  assert.equal(first![col('quantity.id')].split(', ').length, 2, 'and their UUIDs');
  assert.equal(five.rows.length - 1, 5);
  await harvests(45);
  const fifty = await exportOf();
  assert.equal(fifty.rows.length - 1, 50);
  assert.equal(fifty.rows[50]![col('quantity')], 'picked (Weight) 61.5 kg, (Count) 3 crates');
  assert.equal(
    fifty.queries.length,
    five.queries.length,
    `queries for 50 logs (${fifty.queries.length}) = queries for 5 (${five.queries.length}): no query per log\n${fifty.queries.join('\n')}`,
  );
});

test('GeoJSON properties are typed: numbers and booleans as JSON numbers and booleans, empty values as null', async () => {
  const geo = JSON.parse((await request(`${server.url}/api/asset/land?_format=geojson&sort=name`, { token })).text);
  const well = geo.features.find((f: any) => f.properties.name === 'Well').properties;
  assert.equal(typeof well.drupal_internal__id, 'number');
  assert.equal(well.is_location, true);
  assert.equal(well.is_fixed, true);
  assert.equal(well.archived, null);
  assert.equal(well.land_type, 'other');
  for (const column of NOISE) assert.ok(!(column in well), `no ${column} property`);
  const harvests = JSON.parse(
    (await request(`${server.url}/api/log/harvest?_format=geojson&sort=name`, { token })).text,
  );
  const first = harvests.features[0].properties;
  assert.equal(first.quantity, 'picked (Weight) 12.5 kg, (Count) 3 crates', "a log's quantities in GeoJSON as in CSV");
  assert.equal(first.is_movement, false);
  assert.equal(typeof first.drupal_internal__id, 'number');
  const kml = (await request(`${server.url}/api/log/harvest?_format=kml&sort=name`, { token })).text;
  assert.match(kml, /<Data name="quantity"><value>picked \(Weight\) 12\.5 kg, \(Count\) 3 crates<\/value><\/Data>/);
  assert.match(kml, /<Data name="is_movement"><value>false<\/value><\/Data>/);
});

test("CSV's log_type and GeoJSON's and KML's asset_type name the bundle, as the relationship's target id does", async () => {
  // Issue 41 Part E, item 6: both were empty (the bundle is a configuration record, not one with a name in a table).
  const [header, first] = parseCsv(
    (await request(`${server.url}/api/log/activity?_format=csv&page[limit]=1&sort=name`, { token })).text,
  );
  assert.equal(first![header!.indexOf('log_type')], 'activity');
  const geo = JSON.parse((await request(`${server.url}/api/asset/land?_format=geojson&sort=name`, { token })).text);
  assert.deepEqual(
    geo.features.map((f: any) => f.properties.asset_type),
    ['land', 'land'],
  );
  const kml = (await request(`${server.url}/api/asset/land?_format=kml&sort=name`, { token })).text;
  assert.match(kml, /<Data name="asset_type"><value>land<\/value><\/Data>/);
});
