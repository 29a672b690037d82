// What real clients send on writes (issue 4 items 1–3; farmos-behaviour.md §4.8–4.9; clients.md
// §1.4–1.5): timestamps in every form farmOS.js and scripts use, relationship identifiers with
// meta, read-only members echoed back, relationship members without `data`, clearing with
// null/[], relationship and related endpoints, the quantity unit alias, long text, fractions,
// generated log names, and the asset status/archived pair (spec: States).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, JSONAPI } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;
let kg: any;
let litre: any;
let tractor: any;
let baler: any;
let field: any;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  kg = await api.create('taxonomy_term--unit', { name: 'kg' });
  litre = await api.create('taxonomy_term--unit', { name: 'litre' });
  tractor = await api.create('asset--equipment', { name: 'Tractor' });
  baler = await api.create('asset--equipment', { name: 'Baler' });
  field = await api.create('asset--land', { name: 'North Field', land_type: 'field' });
});
after(() => server.close());

const nowSeconds = () => Math.floor(Date.now() / 1000);
const ids = (data: any) => (Array.isArray(data) ? data : data ? [data] : []).map((i: { id: string }) => i.id);

test('timestamps: Unix integers, numeric strings, ISO 8601 with Z, an offset, fractional seconds; rendered RFC 3339 +00:00', async () => {
  const inputs: unknown[] = [
    1700000000,
    '1700000000',
    '2023-11-14T22:13:20Z',
    '2023-11-14T22:13:20+00:00',
    '2023-11-14T23:13:20+01:00',
    '2023-11-14T17:13:20-05:00',
    '2023-11-14T22:13:20+0000',
    '2023-11-14T22:13:20.000Z',
    '2023-11-14T22:13:20.789Z',
    '2023-11-14T22:13:20.5+00:00',
  ];
  for (const timestamp of inputs) {
    const log = await api.create('log--observation', { name: `ts ${JSON.stringify(timestamp)}`, timestamp });
    assert.equal(log.attributes.timestamp, '2023-11-14T22:13:20+00:00', `input ${JSON.stringify(timestamp)}`);
    const read = await api.get(`/api/log/observation/${log.id}`);
    assert.equal(read.body.data.attributes.timestamp, '2023-11-14T22:13:20+00:00');
  }
  // Stored as Unix seconds: an exact filter in seconds finds them all.
  const found = await api.get('/api/log/observation?filter[timestamp]=1700000000&page[limit]=50');
  assert.equal(found.body.data.length, inputs.length);
  // Other timestamp fields too, on PATCH as well.
  const seeding = await api.create('log--seeding', { name: 'Seeding', purchase_date: '2024-02-29T12:00:00Z' });
  assert.equal(seeding.attributes.purchase_date, '2024-02-29T12:00:00+00:00');
  const patched = await api.patch(`/api/log/seeding/${seeding.id}`, {
    data: { type: 'log--seeding', id: seeding.id, attributes: { purchase_date: 1709251200 } },
  });
  assert.equal(patched.body.data.attributes.purchase_date, '2024-03-01T00:00:00+00:00');
  // The whole range RFC 3339 can write, years 0000 to 9999 (two-digit years are not 19xx).
  for (const [input, rendered] of [
    ['0099-01-01T00:00:00Z', '0099-01-01T00:00:00+00:00'],
    [253402300799, '9999-12-31T23:59:59+00:00'],
    [-62167219200, '0000-01-01T00:00:00+00:00'],
  ] as const) {
    const far = await api.create('log--observation', { name: `far ${input}`, timestamp: input });
    assert.equal(far.attributes.timestamp, rendered, String(input));
  }
  // Every rendered timestamp is RFC 3339 in UTC.
  for (const name of ['timestamp', 'created', 'changed', 'revision_created'])
    assert.match(seeding.attributes[name], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/, name);
});

test('relationship identifiers carrying meta (as farmOS.js sends them back) are accepted', async () => {
  const quantity = await api.create(
    'quantity--standard',
    { measure: 'weight', value: { numerator: 1, denominator: 1 } },
    { units: { data: ref(kg) } },
  );
  const res = await api.post('/api/log/harvest', {
    data: {
      type: 'log--harvest',
      attributes: { name: 'With meta' },
      relationships: {
        asset: { data: [{ ...ref(tractor), meta: { drupal_internal__target_id: 999 } }] },
        quantity: {
          data: [{ ...ref(quantity), meta: { target_revision_id: 12345, drupal_internal__target_id: 999 } }],
        },
      },
    },
  });
  assert.equal(res.status, 201, res.text.slice(0, 400));
  const rel = res.body.data.relationships;
  assert.deepEqual(ids(rel.asset.data), [tractor.id]);
  assert.equal(
    rel.asset.data[0].meta.drupal_internal__target_id,
    tractor.attributes.drupal_internal__id,
    'meta is the server’s, not the client’s',
  );
  assert.deepEqual(ids(rel.quantity.data), [quantity.id]);
  assert.equal(typeof rel.quantity.data[0].meta.target_revision_id, 'number');
  // File item meta (description, display) is stored with the reference.
  const up = await api.raw('POST', '/api/log/harvest/file', 'lot sheet', {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="lot.txt"',
    Accept: JSONAPI,
  });
  assert.equal(up.status, 201, up.text.slice(0, 300));
  const withFile = await api.post('/api/log/harvest', {
    data: {
      type: 'log--harvest',
      attributes: { name: 'With file' },
      relationships: { file: { data: [{ ...ref(up.body.data), meta: { description: 'Lot sheet', display: true } }] } },
    },
  });
  assert.equal(withFile.status, 201, withFile.text.slice(0, 400));
  assert.equal(withFile.body.data.relationships.file.data[0].meta.description, 'Lot sheet');
  assert.equal(withFile.body.data.relationships.file.data[0].meta.display, true);
});

test('read-only and computed members echoed back are ignored, on POST (farmOS.js create) and on PATCH (a GET sent back)', async () => {
  // farmOS.js fills every schema member: computed geometry null, location {data: []}, dates, bundle
  // relationship. Its schemata have no drupal_internal__* (a POST with them is a 403, authorship.test.ts);
  // `created` is writable, as in farmOS.
  const id = randomUUID();
  const posted = await api.post('/api/asset/equipment', {
    data: {
      id,
      type: 'asset--equipment',
      attributes: {
        name: 'Echo',
        status: 'active',
        langcode: 'en',
        created: '2001-01-01T00:00:00+00:00',
        changed: 1,
        default_langcode: true,
        revision_default: true,
        revision_translation_affected: true,
        geometry: null,
        inventory: [],
        flag: [],
        id_tag: [],
        notes: null,
        manufacturer: '',
        is_location: false,
        is_fixed: false,
      },
      relationships: {
        asset_type: { data: { type: 'asset_type--asset_type', id: randomUUID() } },
        location: { data: [] },
        group: { data: [] },
        uid: { data: null },
        revision_user: { data: null },
        parent: { data: [] },
        owner: { data: [] },
        file: { data: [] },
        image: { data: [] },
      },
    },
  });
  assert.equal(posted.status, 201, posted.text.slice(0, 600));
  const asset = posted.body.data;
  assert.equal(asset.id, id);
  assert.equal(asset.attributes.created, '2001-01-01T00:00:00+00:00', 'created is kept, as farmOS keeps it');
  assert.equal(
    asset.attributes.changed,
    '1970-01-01T00:00:01+00:00',
    'a changed sent on a new record is kept, as farmOS keeps it (issue 41 B.4)',
  );
  assert.ok(asset.relationships.uid.data, 'uid is the author, not what the client sent');
  assert.equal(asset.attributes.geometry, null);

  // A fixed asset: computed geometry sent back (stale) is ignored; PATCH of the whole GET works.
  const land = await api.create('asset--land', {
    name: 'Paddock',
    land_type: 'paddock',
    is_fixed: true,
    intrinsic_geometry: 'POINT (1 2)',
  });
  assert.equal(land.attributes.geometry.value, 'POINT (1 2)');
  const got = (await api.get(`/api/asset/land/${land.id}`)).body.data;
  const echoed = structuredClone(got);
  echoed.attributes.name = 'Paddock 2';
  echoed.attributes.geometry = { value: 'POINT (9 9)' };
  echoed.relationships.location = { data: [] };
  const patched = await api.patch(`/api/asset/land/${land.id}`, { data: echoed });
  assert.equal(patched.status, 200, patched.text.slice(0, 600));
  assert.equal(patched.body.data.attributes.name, 'Paddock 2');
  assert.equal(
    patched.body.data.attributes.geometry.value,
    'POINT (1 2)',
    'geometry stays computed from intrinsic_geometry',
  );
  assert.equal(patched.body.data.attributes.drupal_internal__id, got.attributes.drupal_internal__id);
  for (const [k, v] of Object.entries(got.attributes)) {
    if (['name', 'changed', 'revision_created', 'drupal_internal__revision_id'].includes(k)) continue;
    assert.deepEqual(patched.body.data.attributes[k], v, k);
  }
});

test('a relationship member without `data` is ignored; data: null and [] clear', async () => {
  const log = await api.create(
    'log--harvest',
    { name: 'Clear me' },
    { asset: { data: [ref(tractor)] }, location: { data: [ref(field)] } },
  );
  const path = `/api/log/harvest/${log.id}`;
  // No data wrapper (farmOS.js sends some members this way): ignored, not an error.
  let res = await api.patch(path, {
    data: {
      type: 'log--harvest',
      id: log.id,
      relationships: { asset: [ref(baler)], location: { links: { self: { href: 'x' } } } },
    },
  });
  assert.equal(res.status, 200, res.text.slice(0, 400));
  assert.deepEqual(ids(res.body.data.relationships.asset.data), [tractor.id]);
  assert.deepEqual(ids(res.body.data.relationships.location.data), [field.id]);
  // [] and null clear to-many fields.
  res = await api.patch(path, { data: { type: 'log--harvest', id: log.id, relationships: { asset: { data: [] } } } });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data.relationships.asset.data, []);
  assert.deepEqual(ids(res.body.data.relationships.location.data), [field.id], 'unsubmitted relationships stay');
  res = await api.patch(path, {
    data: { type: 'log--harvest', id: log.id, relationships: { location: { data: null } } },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data.relationships.location.data, []);
  // null clears a to-one field.
  const q = await api.create('quantity--standard', { measure: 'count' }, { units: { data: ref(kg) } });
  res = await api.patch(`/api/quantity/standard/${q.id}`, {
    data: { type: 'quantity--standard', id: q.id, relationships: { units: { data: null } } },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.data.relationships.units.data, null);
  // Attributes: null clears a single value, [] a multiple one.
  const flagged = await api.create('log--harvest', {
    name: 'Flagged',
    flag: ['review'],
    lot_number: 'L1',
    notes: { value: 'x' },
  });
  res = await api.patch(`/api/log/harvest/${flagged.id}`, {
    data: { type: 'log--harvest', id: flagged.id, attributes: { flag: [], lot_number: null, notes: null } },
  });
  assert.equal(res.status, 200);
  assert.deepEqual(res.body.data.attributes.flag, []);
  assert.equal(res.body.data.attributes.lot_number, null);
  assert.equal(res.body.data.attributes.notes, null);
});

test('relationship endpoints: GET, POST adds, PATCH replaces, DELETE removes; POST to a to-one is 409', async () => {
  const log = await api.create('log--harvest', { name: 'Rel endpoints' }, { asset: { data: [ref(tractor)] } });
  const rel = `/api/log/harvest/${log.id}/relationships/asset`;
  let res = await api.get(rel);
  assert.equal(res.status, 200);
  assert.deepEqual(ids(res.body.data), [tractor.id]);
  assert.equal(res.body.links.self.href, `${server.url}${rel}`);
  assert.equal(res.body.links.related.href, `${server.url}/api/log/harvest/${log.id}/asset`);

  // POST adds; the result holds an identifier the request did not (tractor): 200 with the whole relationship.
  res = await api.post(rel, { data: [ref(baler)] });
  assert.equal(res.status, 200, res.text.slice(0, 300));
  assert.deepEqual(ids(res.body.data), [tractor.id, baler.id]);
  // POST of identifiers already there changes nothing, and everything is in the request: 204.
  res = await api.post(rel, { data: [ref(tractor), ref(baler)] });
  assert.equal(res.status, 204);
  assert.deepEqual(ids((await api.get(rel)).body.data), [tractor.id, baler.id], 'no duplicates');
  // PATCH replaces.
  res = await api.patch(rel, { data: [ref(baler)] });
  assert.ok([200, 204].includes(res.status), `PATCH → ${res.status}`);
  assert.deepEqual(ids((await api.get(rel)).body.data), [baler.id]);
  // DELETE removes the listed identifiers.
  await api.post(rel, { data: [ref(tractor)] });
  res = await api.delete(rel, { data: [ref(baler)] });
  assert.equal(res.status, 204);
  assert.deepEqual(ids((await api.get(rel)).body.data), [tractor.id]);
  // PATCH [] clears.
  res = await api.patch(rel, { data: [] });
  assert.ok([200, 204].includes(res.status));
  assert.deepEqual((await api.get(rel)).body.data, []);
  // DELETE needs a body.
  res = await api.raw('DELETE', rel, undefined, { 'Content-Type': JSONAPI, Accept: JSONAPI });
  assert.equal(res.status, 400, res.text.slice(0, 300));
  // The resource shows the changes.
  await api.patch(rel, { data: [ref(baler), ref(tractor)] });
  assert.deepEqual(
    ids((await api.get(`/api/log/harvest/${log.id}`)).body.data.relationships.asset.data),
    [baler.id, tractor.id],
    'order kept',
  );

  // To-one: POST and DELETE are 409; PATCH sets or clears.
  const q = await api.create('quantity--standard', { measure: 'weight' }, { units: { data: ref(kg) } });
  const units = `/api/quantity/standard/${q.id}/relationships/units`;
  res = await api.post(units, { data: ref(litre) });
  assert.equal(res.status, 409, res.text.slice(0, 300));
  assert.equal(res.body.errors[0].status, '409');
  res = await api.delete(units, { data: ref(kg) });
  assert.equal(res.status, 409);
  res = await api.patch(units, { data: ref(litre) });
  assert.ok([200, 204].includes(res.status), `to-one PATCH → ${res.status} ${res.text.slice(0, 200)}`);
  res = await api.get(units);
  assert.equal(res.body.data.id, litre.id);
  res = await api.patch(units, { data: null });
  assert.ok([200, 204].includes(res.status));
  assert.equal((await api.get(units)).body.data, null);
});

test('related endpoints render the related resources', async () => {
  const q = await api.create(
    'quantity--standard',
    { measure: 'weight', value: { numerator: 2, denominator: 1 } },
    { units: { data: ref(kg) } },
  );
  const log = await api.create(
    'log--harvest',
    { name: 'Related' },
    { asset: { data: [ref(tractor), ref(baler)] }, quantity: { data: [ref(q)] } },
  );
  let res = await api.get(`/api/log/harvest/${log.id}/asset`);
  assert.equal(res.status, 200);
  assert.deepEqual(
    res.body.data.map((r: any) => r.id),
    [tractor.id, baler.id],
  );
  assert.equal(res.body.data[0].type, 'asset--equipment');
  assert.equal(res.body.data[0].attributes.name, 'Tractor');
  res = await api.get(`/api/quantity/standard/${q.id}/units`);
  assert.equal(res.status, 200);
  assert.equal(res.body.data.id, kg.id, 'a to-one related resource is an object');
  assert.equal(res.body.data.attributes.name, 'kg');
  const bare = await api.create('quantity--standard', { measure: 'count' });
  res = await api.get(`/api/quantity/standard/${bare.id}/units`);
  assert.equal(res.status, 200);
  assert.equal(res.body.data, null, 'an empty to-one related resource is null');
  res = await api.get(`/api/log/harvest/${log.id}/category`);
  assert.deepEqual(res.body.data, [], 'an empty to-many related collection is []');
});

test('quantity--quantity takes `unit` and the alias `units`, in writes and in filters; quantity--standard the other way round', async () => {
  const a = await api.create(
    'quantity--quantity',
    { measure: 'weight', value: { numerator: 5, denominator: 1 }, label: 'by unit' },
    { unit: { data: ref(kg) } },
  );
  assert.equal(a.relationships.unit.data.id, kg.id);
  assert.equal(a.relationships.units, undefined, 'rendered under its canonical name only');
  const b = await api.create(
    'quantity--quantity',
    { measure: 'volume', value: { numerator: 7, denominator: 1 }, label: 'by units' },
    { units: { data: ref(litre) } },
  );
  assert.equal(b.relationships.unit.data.id, litre.id, 'the alias is stored in the canonical field');
  const patched = await api.patch(`/api/quantity/quantity/${b.id}`, {
    data: { type: 'quantity--quantity', id: b.id, relationships: { units: { data: ref(kg) } } },
  });
  assert.equal(patched.status, 200);
  assert.equal(patched.body.data.relationships.unit.data.id, kg.id);
  for (const path of ['unit.name', 'units.name']) {
    const res = await api.get(`/api/quantity/quantity?filter[${path}]=kg&sort=label`);
    assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 300)}`);
    assert.deepEqual(
      res.body.data.map((r: any) => r.attributes.label),
      ['by unit', 'by units'],
      path,
    );
  }
  const s = await api.create(
    'quantity--standard',
    { measure: 'weight', label: 'standard by unit' },
    { unit: { data: ref(litre) } },
  );
  assert.equal(s.relationships.units.data.id, litre.id);
  for (const path of ['unit.name', 'units.name', 'unit.id', 'units.id']) {
    const value = path.endsWith('.id') ? litre.id : 'litre';
    const res = await api.get(`/api/quantity/standard?filter[${path}]=${value}`);
    assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 300)}`);
    assert.deepEqual(
      res.body.data.map((r: any) => r.id),
      [s.id],
      path,
    );
  }
  // A log references a quantity--quantity; include follows it.
  const log = await api.create('log--harvest', { name: 'Spec quantity' }, { quantity: { data: [ref(a)] } });
  const inc = await api.get(`/api/log/harvest/${log.id}?include=quantity.unit`);
  assert.deepEqual(inc.body.included.map((r: any) => r.id).sort(), [a.id, kg.id].sort());
});

test("`processed` as farmOS's `default` format gives it: allowed tags kept, others escaped, URLs linked, paragraphs; `plain_text` escapes every tag", async () => {
  const cases: Array<[string, string, string]> = [
    [
      'Seed from "https://seeds.example.com/tomato"',
      'default',
      '<p>Seed from &quot;<a href="https://seeds.example.com/tomato">https://seeds.example.com/tomato</a>&quot;</p>',
    ],
    ['<strong>Bold</strong> and <em>leaning</em>', 'default', '<p><strong>Bold</strong> and <em>leaning</em></p>'],
    [
      '<a href="https://farmos.org" onclick="steal()" target="_blank">farmOS</a>',
      'default',
      '<p><a href="https://farmos.org">farmOS</a></p>',
    ],
    [
      '<a href="javascript:alert(1)">click</a> <a href="java&#x09;script:alert(1)">me</a>',
      'default',
      '<p><a>click</a> <a>me</a></p>',
    ],
    [
      '<script>alert(1)</script><img src=x onerror=alert(1)>',
      'default',
      '<p>&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</p>',
    ],
    [
      'Rows:\n<ul>\n<li>beans</li>\n<li>peas</li>\n</ul>\nDone.',
      'default',
      '<p>Rows:</p>\n<ul>\n<li>beans</li>\n<li>peas</li>\n</ul>\n<p>Done.</p>',
    ],
    [
      'Line one\nLine two\n\nSee www.farmos.org.',
      'default',
      '<p>Line one<br />\nLine two</p>\n<p>See <a href="http://www.farmos.org">www.farmos.org</a>.</p>',
    ],
    ['<strong>unclosed', 'default', '<p><strong>unclosed</strong></p>'],
    [
      '<strong>x</strong> & https://a.example/?q=1',
      'plain_text',
      '<p>&lt;strong&gt;x&lt;/strong&gt; &amp; <a href="https://a.example/?q=1">https://a.example/?q=1</a></p>',
    ],
  ];
  for (const [value, format, processed] of cases) {
    const log = await api.create('log--observation', { name: 'Processed', notes: { value, format } });
    assert.equal(log.attributes.notes.processed, processed, value);
    const read = await api.get(`/api/log/observation/${log.id}`);
    assert.equal(read.body.data.attributes.notes.processed, processed, `${value} (read back)`);
  }
});

test('long text: {value, format, processed}; format defaults to `default`; processed is safe HTML', async () => {
  const log = await api.create('log--observation', {
    name: 'Notes',
    notes: { value: 'Line one\n\nSee https://farmos.org <script>alert(1)</script>', format: 'default' },
  });
  const notes = log.attributes.notes;
  assert.equal(notes.value, 'Line one\n\nSee https://farmos.org <script>alert(1)</script>');
  assert.equal(notes.format, 'default');
  assert.equal(typeof notes.processed, 'string');
  assert.ok(notes.processed.includes('Line one'));
  assert.ok(!notes.processed.includes('<script'), 'no raw script in processed text');
  const noFormat = await api.create('log--observation', { name: 'Notes 2', notes: { value: 'Plain' } });
  assert.equal(noFormat.attributes.notes.format, 'default');
  assert.equal(noFormat.attributes.notes.value, 'Plain');
  // `processed` echoed back by a client is ignored.
  const echoed = await api.patch(`/api/log/observation/${noFormat.id}`, {
    data: {
      type: 'log--observation',
      id: noFormat.id,
      attributes: { notes: { value: 'Plain 2', format: 'default', processed: '<p>stale</p>' } },
    },
  });
  assert.equal(echoed.status, 200);
  assert.equal(echoed.body.data.attributes.notes.value, 'Plain 2');
  assert.ok(!echoed.body.data.attributes.notes.processed.includes('stale'));
  // Term descriptions are long text too.
  const term = await api.create('taxonomy_term--log_category', {
    name: 'Cat',
    description: { value: 'About it', format: 'default' },
  });
  assert.deepEqual(Object.keys(term.attributes.description).sort(), ['format', 'processed', 'value']);
});

test('fractions: {numerator, denominator} and {decimal} in; {numerator, denominator, decimal} out', async () => {
  const cases: Array<[unknown, number, string]> = [
    [{ numerator: 3, denominator: 4 }, 0.75, '0.75'],
    [{ numerator: 5, denominator: 1 }, 5, '5'],
    [{ decimal: '1.25' }, 1.25, '1.25'],
    [{ decimal: '0.3' }, 0.3, '0.3'],
    [{ decimal: 2.5 }, 2.5, '2.5'],
    [{ numerator: -1, denominator: 8 }, -0.125, '-0.125'],
  ];
  for (const [value, number, decimal] of cases) {
    const q = await api.create('quantity--standard', { measure: 'weight', value });
    const v = q.attributes.value;
    assert.deepEqual(Object.keys(v).sort(), ['decimal', 'denominator', 'numerator'], JSON.stringify(value));
    assert.ok(Number.isInteger(v.numerator) && Number.isInteger(v.denominator) && v.denominator > 0);
    assert.ok(
      Math.abs(v.numerator / v.denominator - number) < 1e-12,
      `${JSON.stringify(value)} → ${JSON.stringify(v)}`,
    );
    assert.equal(v.decimal, decimal, JSON.stringify(value));
  }
  // A fraction rendered by the server can be sent back as it is.
  const q = await api.create('quantity--standard', { measure: 'weight', value: { decimal: '1.5' } });
  const back = await api.patch(`/api/quantity/standard/${q.id}`, {
    data: { type: 'quantity--standard', id: q.id, attributes: { value: q.attributes.value, label: 'sent back' } },
  });
  assert.equal(back.status, 200, back.text.slice(0, 300));
  assert.equal(back.body.data.attributes.value.decimal, '1.5');
});

test('a log without a name is named "<Bundle> log <id>"', async () => {
  const h = await api.create('log--harvest', { timestamp: 1700000000 });
  assert.equal(h.attributes.name, `Harvest log ${h.attributes.drupal_internal__id}`);
  const empty = await api.create('log--lab_test', { name: '' });
  assert.equal(empty.attributes.name, `Lab test log ${empty.attributes.drupal_internal__id}`);
  // Cleared on PATCH: named again.
  const named = await api.create('log--harvest', { name: 'Named' });
  const res = await api.patch(`/api/log/harvest/${named.id}`, {
    data: { type: 'log--harvest', id: named.id, attributes: { name: '' } },
  });
  assert.equal(res.body.data.attributes.name, `Harvest log ${named.attributes.drupal_internal__id}`);
  // The generated name is stored: filters find it.
  const found = await api.get(`/api/log/harvest?filter[name]=${encodeURIComponent(h.attributes.name)}`);
  assert.deepEqual(
    found.body.data.map((r: any) => r.id),
    [h.id],
  );
});

test("PATCH: status and archived as farmOS 3.x's AssetStorage::doPreSave keeps them in step (updates only)", async () => {
  const T = '2024-01-01T00:00:00+00:00';
  const T2 = '2025-06-01T12:00:00+00:00';
  const patch = async (asset: any, attributes: Record<string, unknown>) => {
    const res = await api.patch(`/api/asset/equipment/${asset.id}`, {
      data: { type: 'asset--equipment', id: asset.id, attributes },
    });
    assert.equal(res.status, 200, res.text);
    return [res.body.data.attributes.status, res.body.data.attributes.archived];
  };
  const active = () => api.create('asset--equipment', { name: 'Active' });
  const archived = () => api.create('asset--equipment', { name: 'Archived', status: 'archived', archived: T });
  // Status unchanged, an archived time set on an active asset: archived at that time.
  assert.deepEqual(await patch(await active(), { status: 'active', archived: T }), ['archived', T]);
  assert.deepEqual(await patch(await active(), { archived: T }), ['archived', T]);
  // Status unchanged, the time cleared on an archived asset: active again.
  assert.deepEqual(await patch(await archived(), { status: 'archived', archived: null }), ['active', null]);
  assert.deepEqual(await patch(await archived(), { archived: null }), ['active', null]);
  // Status unchanged, archived, a new time: kept.
  assert.deepEqual(await patch(await archived(), { archived: T2 }), ['archived', T2]);
  // Status changed to archived: the time sent, else now.
  assert.deepEqual(await patch(await active(), { status: 'archived', archived: T2 }), ['archived', T2]);
  const [status, at] = await patch(await active(), { status: 'archived' });
  assert.equal(status, 'archived');
  assert.ok(Math.abs(Date.parse(at) / 1000 - nowSeconds()) < 60, `archived ≈ now, got ${at}`);
  // Status changed from archived: the time is cleared, even when one is sent.
  assert.deepEqual(await patch(await archived(), { status: 'active' }), ['active', null]);
  assert.deepEqual(await patch(await archived(), { status: 'active', archived: T2 }), ['active', null]);
  // Nothing about either: unchanged.
  assert.deepEqual(await patch(await archived(), { name: 'Renamed' }), ['archived', T]);
  assert.deepEqual(await patch(await active(), { name: 'Renamed' }), ['active', null]);
});

test('asset status and archived stay consistent (spec: active has no archived time, archived has one)', async () => {
  const t0 = nowSeconds();
  const asset = await api.create('asset--equipment', { name: 'Old tractor' });
  assert.equal(asset.attributes.status, 'active');
  assert.equal(asset.attributes.archived, null);
  const path = `/api/asset/equipment/${asset.id}`;
  // farmOS.js creates assets with archived = now and status active: active wins, archived is empty.
  const fromJs = await api.create('asset--equipment', { name: 'From farmOS.js', status: 'active', archived: t0 });
  assert.equal(fromJs.attributes.status, 'active');
  assert.equal(fromJs.attributes.archived, null);
  // Archiving sets the time.
  let res = await api.patch(path, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { status: 'archived' } },
  });
  assert.equal(res.status, 200);
  assert.equal(res.body.data.attributes.status, 'archived');
  const archivedAt = Date.parse(res.body.data.attributes.archived) / 1000;
  assert.ok(
    archivedAt >= t0 - 1 && archivedAt <= nowSeconds() + 1,
    `archived ≈ now, got ${res.body.data.attributes.archived}`,
  );
  // Restoring clears it.
  res = await api.patch(path, { data: { type: 'asset--equipment', id: asset.id, attributes: { status: 'active' } } });
  assert.equal(res.body.data.attributes.status, 'active');
  assert.equal(res.body.data.attributes.archived, null);
  // Sending only an archived time archives at that time; clearing it restores.
  res = await api.patch(path, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { archived: '2024-01-01T00:00:00Z' } },
  });
  assert.equal(res.body.data.attributes.status, 'archived');
  assert.equal(res.body.data.attributes.archived, '2024-01-01T00:00:00+00:00');
  res = await api.patch(path, { data: { type: 'asset--equipment', id: asset.id, attributes: { archived: null } } });
  assert.equal(res.body.data.attributes.status, 'active');
  assert.equal(res.body.data.attributes.archived, null);
  // Created archived: the time is set.
  const born = await api.create('asset--equipment', { name: 'Born archived', status: 'archived' });
  assert.equal(born.attributes.status, 'archived');
  assert.ok(born.attributes.archived, 'an archived asset has an archived time');
  const bornAt = await api.create('asset--equipment', {
    name: 'Archived at',
    status: 'archived',
    archived: 1704067200,
  });
  assert.equal(bornAt.attributes.archived, '2024-01-01T00:00:00+00:00');
  // Filters see the stored pair.
  const active = await api.get(
    `/api/asset/equipment?filter[status]=archived&filter[archived][condition][operator]=IS NULL&filter[archived][condition][path]=archived`,
  );
  assert.deepEqual(active.body.data, [], 'no archived asset without an archived time');
});
