// Imports farmers need (operations issue, item 9): field boundaries from KML or GeoJSON as land,
// structure or water assets, and logs from a CSV in the shape the export writes; each import is
// one transaction that reports what it created, or names the bad row and changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../support/project.ts';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';

function tilth(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [join(ROOT, 'bin', 'tilth.js'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, TILTH_LOG_LEVEL: 'silent', DATABASE_URL: '', ...env },
    timeout: 120_000,
  });
}

const KML = `<?xml version="1.0" encoding="UTF-8"?>
<kml xmlns="http://www.opengis.net/kml/2.2"><Document><Folder>
<Placemark><name>North field</name><description>Clay loam</description><Polygon><outerBoundaryIs><LinearRing><coordinates>
-72.50,42.30,0 -72.40,42.30,0 -72.40,42.40,0 -72.50,42.30,0</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
<Placemark><name>South field</name><Polygon><outerBoundaryIs><LinearRing><coordinates>-72.5,42.2 -72.4,42.2 -72.4,42.25 -72.5,42.2</coordinates></LinearRing></outerBoundaryIs></Polygon></Placemark>
</Folder></Document></kml>`;

const GEOJSON = JSON.stringify({
  type: 'FeatureCollection',
  features: [
    { type: 'Feature', properties: { name: 'Barn' }, geometry: { type: 'Point', coordinates: [-72.45, 42.35] } },
    {
      type: 'Feature',
      properties: { name: 'Greenhouse' },
      geometry: {
        type: 'Polygon',
        coordinates: [
          [
            [-72.46, 42.36],
            [-72.45, 42.36],
            [-72.45, 42.37],
            [-72.46, 42.36],
          ],
        ],
      },
    },
  ],
});

test('field boundaries from KML and GeoJSON, then logs from an exported CSV, each all or nothing', async () => {
  const database = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-import-'));
  let server = await startChildServer(database.env);
  try {
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const get = async (path: string) => (await request(`${server.url}/api/${path}`, { token })).body.data;
    writeFileSync(join(dir, 'fields.kml'), KML);
    writeFileSync(join(dir, 'buildings.geojson'), GEOJSON);

    const fields = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'land', '--land-type', 'field'],
      database.env,
    );
    assert.equal(fields.status, 0, fields.stderr);
    assert.match(fields.stdout, /created 2 asset--land/);
    const land = await get('asset/land?sort=name');
    assert.deepEqual(
      land.map((a: any) => [a.attributes.name, a.attributes.land_type, a.attributes.is_location]),
      [
        ['North field', 'field', true],
        ['South field', 'field', true],
      ],
    );
    assert.match(land[0].attributes.intrinsic_geometry.value, /^POLYGON ?\(\(-72\.5 42\.3,/);
    assert.equal(land[0].attributes.notes.value, 'Clay loam');

    const buildings = tilth(
      ['import', 'geo', join(dir, 'buildings.geojson'), '--bundle', 'structure', '--structure-type', 'building'],
      database.env,
    );
    assert.equal(buildings.status, 0, buildings.stderr);
    assert.equal((await get('asset/structure')).length, 2);

    // A bad land type: the whole file is refused, naming the feature (with --allow-duplicates, since its fields are there already).
    const bad = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'land', '--land-type', 'moonbase', '--allow-duplicates'],
      database.env,
    );
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /placemark 1 \("North field"\): land_type/);
    assert.equal((await get('asset/land')).length, 2, 'nothing was added');

    // Logs: write some, export them, import the export into the same farm under new UUIDs.
    for (const [i, name] of ['Plough', 'Harrow', 'Sow'].entries()) {
      const res = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: {
          data: {
            type: 'log--activity',
            attributes: { name, status: 'done', timestamp: 1700000000 + i, notes: { value: `Step ${i + 1}, by hand` } },
            relationships: { asset: { data: [{ type: 'asset--land', id: land[0].id }] } },
          },
        },
      });
      assert.equal(res.status, 201, res.text);
    }
    const csv = (await request(`${server.url}/api/log/activity?_format=csv&sort=timestamp`, { token })).text;
    const withoutIds = csv.replace(/^"?[0-9a-f-]{36}"?,/gm, ','); // new records, not copies with the same UUID
    writeFileSync(join(dir, 'logs.csv'), withoutIds);
    const logs = tilth(['import', 'csv', join(dir, 'logs.csv')], database.env);
    assert.equal(logs.status, 0, logs.stderr);
    assert.match(logs.stdout, /created 3 log--activity/);
    const all = await get('log/activity?sort=name');
    assert.equal(all.length, 6);
    const copies = all.filter((l: any) => l.attributes.name === 'Harrow');
    assert.equal(copies.length, 2);
    assert.equal(copies[1].attributes.notes.value, 'Step 2, by hand');
    assert.equal(copies[1].attributes.timestamp, copies[0].attributes.timestamp);
    assert.deepEqual(
      copies[1].relationships.asset.data.map((a: any) => a.id),
      [land[0].id],
      'relationships come back by UUID',
    );

    // A bad row names itself and nothing is kept.
    writeFileSync(
      join(dir, 'bad.csv'),
      `${withoutIds.split('\r\n')[0]}\r\n${withoutIds.split('\r\n')[1]}\r\n${withoutIds.split('\r\n')[2]!.replace(',"done",', ',"finished",')}\r\n`,
    );
    const refused = tilth(['import', 'csv', join(dir, 'bad.csv')], database.env);
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(refused.stderr, /^row 3: status/m);
    assert.equal((await get('log/activity')).length, 6, 'the good row before it was not kept either');
    writeFileSync(join(dir, 'names.csv'), 'type,name,asset\r\nlog--activity,Weed,Nowhere field\r\n');
    const unknown = tilth(['import', 'csv', join(dir, 'names.csv')], database.env);
    assert.match(unknown.stderr, /row 2: asset "Nowhere field" names no record/);
    // A log's quantities as the export writes them are text: without their UUIDs, the row says so.
    writeFileSync(
      join(dir, 'quantities.csv'),
      'type,name,quantity,quantity.id\r\nlog--harvest,Beans,"picked (Weight) 12.5 kg",\r\n',
    );
    const quantities = tilth(['import', 'csv', join(dir, 'quantities.csv')], database.env);
    assert.equal(quantities.status, 1, quantities.stdout);
    assert.match(
      quantities.stderr,
      /row 2: quantity "picked \(Weight\) 12\.5 kg" is the quantities' text; give their UUIDs in quantity\.id/,
    );
  } finally {
    await server.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a CSV exported by another farm imports here: its owner, uid and asset UUIDs, unknown here, give way to the names beside them; an unknown one without a name is named by its column', async () => {
  // Issue 41 Part E, item 4: the other farm's UUIDs won over the names, and the row was refused
  // with the API's "The resource identified by user--user:… could not be found", naming no column.
  const database = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-import-'));
  const server = await startChildServer(database.env);
  try {
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const field = await request(`${server.url}/api/asset/land`, {
      method: 'POST',
      token,
      json: { data: { type: 'asset--land', attributes: { name: 'North field', land_type: 'field' } } },
    });
    assert.equal(field.status, 201, field.text);
    const elsewhere = (n: number) => `0b0e7a1c-5d1e-4c3a-9f0e-00000000000${n}`; // the other farm's records
    writeFileSync(
      join(dir, 'other-farm.csv'),
      'id,type,name,status,owner,owner.id,uid,uid.id,asset,asset.id\r\n' +
        `${elsewhere(1)},log--activity,Plough,done,${ADMIN.name},${elsewhere(2)},${ADMIN.name},${elsewhere(2)},North field,${elsewhere(3)}\r\n`,
    );
    const imported = tilth(['import', 'csv', join(dir, 'other-farm.csv')], database.env);
    assert.equal(imported.status, 0, imported.stderr);
    const log = (await request(`${server.url}/api/log/activity?include=owner,uid,asset`, { token })).body;
    assert.equal(log.data.length, 1);
    const related = (name: string) => log.data[0].relationships[name].data;
    const admin = log.included.find((r: { type: string }) => r.type === 'user--user');
    assert.equal(admin.attributes.name, ADMIN.name);
    assert.deepEqual(
      [related('owner')[0].id, related('uid').id, related('asset')[0].id],
      [admin.id, admin.id, field.body.data.id],
      "this farm's records, found by name",
    );

    // An unknown UUID with no name beside it: the row and the column are named.
    writeFileSync(join(dir, 'no-names.csv'), `type,name,owner.id\r\nlog--activity,Harrow,${elsewhere(4)}\r\n`);
    const refused = tilth(['import', 'csv', join(dir, 'no-names.csv')], database.env);
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(refused.stderr, new RegExp(`row 2: owner\\.id "${elsewhere(4)}" names no record here.*owner`));
    assert.equal(
      (await request(`${server.url}/api/log/activity`, { token })).body.data.length,
      1,
      'nothing of it was kept',
    );
  } finally {
    await server.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('import geo twice: features whose name and shape are already there are skipped and counted; --allow-duplicates creates them anyway', async () => {
  // Issue 41 Part E, item 5: the second import silently made every field twice.
  const database = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-import-'));
  const server = await startChildServer(database.env);
  try {
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const names = async (bundle: string) =>
      (await request(`${server.url}/api/asset/${bundle}?sort=name`, { token })).body.data.map(
        (a: { attributes: { name: string } }) => a.attributes.name,
      );
    writeFileSync(join(dir, 'fields.kml'), KML);
    const first = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'land', '--land-type', 'field'],
      database.env,
    );
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /created 2 asset--land/);

    // The same file again, with one field added and one redrawn: only those two are new.
    const more = KML.replace('-72.5,42.2 -72.4,42.2', '-72.5,42.2 -72.41,42.2').replace(
      '</Folder>',
      '<Placemark><name>East field</name><Point><coordinates>-72.3,42.3</coordinates></Point></Placemark></Folder>',
    );
    writeFileSync(join(dir, 'more.kml'), more);
    const again = tilth(
      ['import', 'geo', join(dir, 'more.kml'), '--bundle', 'land', '--land-type', 'field'],
      database.env,
    );
    assert.equal(again.status, 0, again.stderr);
    assert.match(
      again.stdout,
      /created 2 asset--land; skipped 1 already here \(same name and shape\): placemark 1 \("North field"\)/,
    );
    assert.deepEqual(await names('land'), ['East field', 'North field', 'South field', 'South field']);
    // The same shapes as structures are not land's duplicates.
    const structures = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'structure', '--structure-type', 'building'],
      database.env,
    );
    assert.match(structures.stdout, /created 2 asset--structure\.$/m);

    const forced = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'land', '--land-type', 'field', '--allow-duplicates'],
      database.env,
    );
    assert.equal(forced.status, 0, forced.stderr);
    assert.match(forced.stdout, /created 2 asset--land\.$/m);
    assert.deepEqual(await names('land'), [
      'East field',
      'North field',
      'North field',
      'South field',
      'South field',
      'South field',
    ]);
  } finally {
    await server.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('import --as a user whose roles may not create the records is refused, naming the permission, and creates nothing', async () => {
  // "Their rights apply, as to a token of theirs": a viewer's import created land assets, for the
  // import saved through the entity service without the create command's check of the type.
  const database = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), 'tilth-import-'));
  const server = await startChildServer(database.env);
  try {
    const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
    const viewer = tilth(
      ['user', 'create', '--name', 'reader', '--password', 'a long enough password', '--role', 'farm_viewer'],
      database.env,
    );
    assert.equal(viewer.status, 0, viewer.stderr);
    writeFileSync(join(dir, 'fields.kml'), KML);
    const refused = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'land', '--land-type', 'field', '--as', 'reader'],
      database.env,
    );
    assert.equal(refused.status, 1, refused.stdout);
    assert.match(
      refused.stderr,
      /placemark 1 \("North field"\): The current user is not allowed to POST asset--land resources: it needs the "content:create" permission/,
    );
    const land = await request(`${server.url}/api/asset/land`, { token });
    assert.deepEqual(land.body.data, [], 'nothing was created');

    // A worker may: the same file imports as them.
    const worker = tilth(
      ['user', 'create', '--name', 'hand', '--password', 'a long enough password', '--role', 'farm_worker'],
      database.env,
    );
    assert.equal(worker.status, 0, worker.stderr);
    const imported = tilth(
      ['import', 'geo', join(dir, 'fields.kml'), '--bundle', 'land', '--land-type', 'field', '--as', 'hand'],
      database.env,
    );
    assert.equal(imported.status, 0, imported.stderr);
    assert.match(imported.stdout, /Imported .* as hand: created 2 asset--land/);
  } finally {
    await server.stop();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});
