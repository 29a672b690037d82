// Geometry is checked (issue 29 Part B, item 5): WKT that parses but is no shape a map can draw
// (a polygon whose ring is not closed, a line of one point) or that lies off the Earth (latitude
// beyond ±90°, longitude beyond ±180°) is a 422 naming the field, on the API and in map-file
// imports, never a stored record.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServerAsAdmin, createTestDatabase, ADMIN, type TestServer } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';
import { ROOT } from '../support/project.ts';

let server: TestServer;
let token: string;

before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

const BAD: Array<[string, RegExp]> = [
  ['POLYGON ((1 2, 3 4))', /closed/],
  ['POLYGON ((1 2, 3 4, 5 6))', /closed/],
  ['POLYGON ((1 2, 3 4, 1 2))', /at least 4 points/],
  ['MULTIPOLYGON (((-72.5 42.3, -72.4 42.3, -72.4 42.4, -72.5 42.3)), ((1 2, 3 4)))', /closed/],
  ['LINESTRING (1 2)', /at least 2 points/],
  ['POINT (142.3 -272.5)', /latitude -272\.5/],
  ['POINT (-272.5 42.3)', /longitude -272\.5/],
  ['GEOMETRYCOLLECTION (POINT (1 2), POINT (1 95))', /latitude 95/],
];

const GOOD = [
  'POINT (-72.5 42.3)',
  'POINT (180 -90)',
  'POLYGON ((-72.5 42.3, -72.4 42.3, -72.4 42.4, -72.5 42.3))',
  'LINESTRING (-72.5 42.3, -72.4 42.3)',
  'MULTIPOINT ((1 2), (3 4))',
];

const post = (path: string, data: unknown) =>
  request(`${server.url}/api/${path}`, { method: 'POST', token, json: { data } });

test('a polygon that is not closed, a one-point line and coordinates off the Earth are 422s naming the field', async () => {
  for (const [wkt, detail] of BAD) {
    const land = await post('asset/land', {
      type: 'asset--land',
      attributes: { name: 'Field', land_type: 'field', intrinsic_geometry: wkt },
    });
    assert.equal(land.status, 422, `${wkt}: ${land.text}`);
    assert.equal(land.body.errors.length, 1, land.text);
    assert.equal(land.body.errors[0].source.pointer, '/data/attributes/intrinsic_geometry', wkt);
    assert.match(land.body.errors[0].detail, /^intrinsic_geometry: /, wkt);
    assert.match(land.body.errors[0].detail, detail, wkt);

    const log = await post('log/observation', {
      type: 'log--observation',
      attributes: { name: 'Seen', geometry: { value: wkt } },
    });
    assert.equal(log.status, 422, `${wkt}: ${log.text}`);
    assert.equal(log.body.errors[0].source.pointer, '/data/attributes/geometry', wkt);
    assert.match(log.body.errors[0].detail, detail, wkt);
  }
  const listed = await request(`${server.url}/api/asset/land`, { token });
  assert.equal(listed.body.data.length, 0, 'nothing was stored');
  const observations = await request(`${server.url}/api/log/observation`, { token });
  assert.equal(observations.body.data.length, 0, 'nothing was stored');
});

test('a latitude out of range says WKT puts longitude first', async () => {
  const res = await post('log/observation', {
    type: 'log--observation',
    attributes: { name: 'Swapped', geometry: 'POINT (42.3 -172.5)' },
  });
  assert.equal(res.status, 422, res.text);
  assert.match(res.body.errors[0].detail, /longitude first/);
});

test('an update to a bad geometry is refused too, and the record keeps its shape', async () => {
  const created = await post('asset/land', {
    type: 'asset--land',
    attributes: { name: 'Kept', land_type: 'field', intrinsic_geometry: GOOD[0] },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.data.id;
  const patched = await request(`${server.url}/api/asset/land/${id}`, {
    method: 'PATCH',
    token,
    json: { data: { type: 'asset--land', id, attributes: { intrinsic_geometry: 'POLYGON ((1 2, 3 4))' } } },
  });
  assert.equal(patched.status, 422, patched.text);
  assert.equal(patched.body.errors[0].source.pointer, '/data/attributes/intrinsic_geometry');
  const read = await request(`${server.url}/api/asset/land/${id}`, { token });
  assert.equal(read.body.data.attributes.intrinsic_geometry.value, GOOD[0]);
  const removed = await request(`${server.url}/api/asset/land/${id}`, { method: 'DELETE', token });
  assert.equal(removed.status, 204);
});

test('shapes a map can draw are still taken', async () => {
  for (const wkt of GOOD) {
    const res = await post('log/observation', { type: 'log--observation', attributes: { name: wkt, geometry: wkt } });
    assert.equal(res.status, 201, `${wkt}: ${res.text}`);
    assert.equal(res.body.data.attributes.geometry.value, wkt);
  }
});

test('map-file imports refuse the same shapes, naming the feature and the field, and keep nothing', async () => {
  const database = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-geometry-'));
  const child = await startChildServer(database.env);
  try {
    const childToken = await passwordToken(child.url, ADMIN.name, ADMIN.password);
    const tilth = (args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), ...args], {
        encoding: 'utf8',
        env: { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '', ...database.env },
        timeout: 120_000,
      });
    const good = {
      type: 'Feature',
      properties: { name: 'Good field' },
      geometry: {
        type: 'Polygon',
        coordinates: [
          [
            [-72.5, 42.3],
            [-72.4, 42.3],
            [-72.4, 42.4],
            [-72.5, 42.3],
          ],
        ],
      },
    };
    for (const [name, geometry, detail] of [
      [
        'Open field',
        {
          type: 'Polygon',
          coordinates: [
            [
              [1, 2],
              [3, 4],
            ],
          ],
        },
        /closed/,
      ],
      ['Far well', { type: 'Point', coordinates: [142.3, -272.5] }, /latitude -272\.5/],
    ] as const) {
      const file = join(dir, 'fields.geojson');
      writeFileSync(
        file,
        JSON.stringify({
          type: 'FeatureCollection',
          features: [good, { type: 'Feature', properties: { name }, geometry }],
        }),
      );
      const result = tilth(['import', 'geo', file, '--bundle', 'land', '--land-type', 'field']);
      assert.equal(result.status, 1, `${name}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, new RegExp(`feature 2 \\("${name}"\\): intrinsic_geometry: `));
      assert.match(result.stderr, detail);
    }
    const kml = join(dir, 'fields.kml');
    writeFileSync(
      kml,
      `<?xml version="1.0" encoding="UTF-8"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document>
<Placemark><name>Open field</name><Polygon><outerBoundaryIs><LinearRing><coordinates>1,2 3,4</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
</Document></kml>`,
    );
    const fromKml = tilth(['import', 'geo', kml, '--bundle', 'land', '--land-type', 'field']);
    assert.equal(fromKml.status, 1, fromKml.stdout);
    assert.match(fromKml.stderr, /placemark 1 \("Open field"\): intrinsic_geometry: .*closed/);
    const land = await request(`${child.url}/api/asset/land`, { token: childToken });
    assert.equal(land.body.data.length, 0, 'nothing was kept, the good feature neither');
  } finally {
    await child.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});
