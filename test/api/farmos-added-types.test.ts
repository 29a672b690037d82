// The types and fields farmOS added after 2.x (issue 39, "Additive types and fields"; README "Types
// added from farmOS 3.x and 4.x"), each created, read, filtered and included over HTTP: through
// the published farmOS.js client where it knows the entity type (assets and terms), through plain
// JSON:API where it does not (organizations). The schemas list them; a term's image uploads; an
// organization has its assets.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import farmosPkg from 'farmos';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken, request } from '../support/http.ts';
import { Api, ref } from '../support/fixtures.ts';
import { addUser } from '../oauth/helpers.ts';

const farmOS = (farmosPkg as unknown as { default: (config: unknown) => any }).default;

/** A whole 1×1 PNG: image fields check the content. */
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
  'hex',
);

let server: TestServer;
let api: Api;
let farm: any;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
  let token: any = null;
  farm = farmOS({
    remote: {
      host: server.url,
      clientId: 'farm',
      getToken: () => token,
      setToken: (t: any) => {
        token = t;
      },
    },
  });
  await farm.remote.authorize(ADMIN.name, ADMIN.password);
  farm.schema.set((await farm.schema.fetch()).data);
});
after(() => server.close());

const ADDED = ['asset--product', 'taxonomy_term--product_type', 'taxonomy_term--equipment_type', 'organization--farm'];

test('/api and /api/schema list the added types; their schemas carry the added fields', async () => {
  const root = await request(`${server.url}/api`);
  const index = await request(`${server.url}/api/schema`);
  assert.equal(index.status, 200);
  const links = index.body.allOf[1].links as Array<{
    templatePointers: { instanceHref: string };
    targetSchema: { $ref: string };
  }>;
  for (const type of ADDED) {
    const [entity, bundle] = type.split('--');
    assert.equal(root.body.links[type]?.href, `${server.url}/api/${entity}/${bundle}`, type);
    assert.ok(
      links.some(
        (l) =>
          l.templatePointers.instanceHref === `/links/${type}/href` &&
          l.targetSchema.$ref === `${server.url}/api/${entity}/${bundle}/collection/schema`,
      ),
      `${type} in /api/schema`,
    );
  }
  const schema = async (type: string) => {
    const [entity, bundle] = type.split('--');
    const res = await request(`${server.url}/api/${entity}/${bundle}/resource/schema`);
    assert.equal(res.status, 200, type);
    return res.body.definitions;
  };
  // Every vocabulary, farmOS's own and ones added since: file, image and external_uri (3.2).
  for (const vocabulary of ['unit', 'plant_type', 'equipment_type', 'product_type', 'material_type']) {
    const defs = await schema(`taxonomy_term--${vocabulary}`);
    assert.deepEqual(defs.attributes.properties.external_uri.type, 'array', vocabulary);
    assert.equal(defs.attributes.properties.external_uri.items.format, 'uri', vocabulary);
    assert.equal(defs.attributes.properties.external_uri.title, 'External URI');
    assert.ok(defs.relationships.properties.file, `${vocabulary} has file`);
    assert.ok(defs.relationships.properties.image, `${vocabulary} has image`);
  }
  const plantType = await schema('taxonomy_term--plant_type');
  assert.equal(plantType.attributes.properties.harvest_days.title, 'Days of harvest');
  assert.equal(plantType.attributes.properties.harvest_days.type, 'integer');
  const equipment = await schema('asset--equipment');
  assert.equal(equipment.relationships.properties.equipment_type.properties.data.type, 'array', 'to many');
  const product = await schema('asset--product');
  assert.ok(product.attributes.required?.includes('name'));
  assert.ok(product.relationships.properties.product_type);
  const land = await schema('asset--land');
  assert.equal(land.relationships.properties.farm.properties.data.type, 'object', "an asset's farm is to one");
  const material = await schema('quantity--material');
  assert.equal(material.relationships.properties.material_type.properties.data.type, 'array', 'to many (3.0)');
  const organization = await schema('organization--farm');
  assert.equal(organization.attributes.properties.archived.type, 'boolean');
  assert.ok(organization.attributes.required?.includes('name'));
  assert.ok(organization.relationships.properties.image);
});

test('equipment types, plant types with days of harvest and external URIs: created, read, filtered and included with farmOS.js', async () => {
  const tractorType = await farm.term.send(
    farm.term.create({
      type: 'taxonomy_term--equipment_type',
      name: 'Tractor',
      external_uri: ['https://www.wikidata.org/wiki/Q39495', 'urn:example:tractor'],
    }),
  );
  const mowerType = await farm.term.send(farm.term.create({ type: 'taxonomy_term--equipment_type', name: 'Mower' }));
  assert.deepEqual(tractorType.attributes.external_uri, [
    'https://www.wikidata.org/wiki/Q39495',
    'urn:example:tractor',
  ]);
  const kubota = await farm.asset.send(
    farm.asset.create({
      type: 'asset--equipment',
      name: 'Kubota',
      equipment_type: [ref(tractorType), ref(mowerType)],
    }),
  );
  assert.deepEqual(
    kubota.relationships.equipment_type.map((r: any) => r.id),
    [tractorType.id, mowerType.id],
  );
  await farm.asset.send(farm.asset.create({ type: 'asset--equipment', name: 'Wheelbarrow' }));

  const byType = await farm.asset.fetch({ filter: { type: 'asset--equipment', 'equipment_type.name': 'Mower' } });
  assert.deepEqual(
    byType.data.map((a: any) => a.attributes.name),
    ['Kubota'],
  );
  const withTypes = await api.get(`/api/asset/equipment/${kubota.id}?include=equipment_type`);
  assert.deepEqual(withTypes.body.included.map((t: any) => t.attributes.name).sort(), ['Mower', 'Tractor']);
  const byUri = await api.get(
    `/api/taxonomy_term/equipment_type?filter[external_uri]=${encodeURIComponent('urn:example:tractor')}`,
  );
  assert.deepEqual(
    byUri.body.data.map((t: any) => t.id),
    [tractorType.id],
  );

  const garlic = await farm.term.send(
    farm.term.create({ type: 'taxonomy_term--plant_type', name: 'Garlic', harvest_days: 14, maturity_days: 240 }),
  );
  assert.equal(garlic.attributes.harvest_days, 14);
  await farm.term.send(farm.term.create({ type: 'taxonomy_term--plant_type', name: 'Lettuce', harvest_days: 3 }));
  const long = await farm.term.fetch({
    filter: { type: 'taxonomy_term--plant_type', harvest_days: { $gt: 7 } },
  });
  assert.deepEqual(
    long.data.map((t: any) => t.attributes.name),
    ['Garlic'],
  );
});

test('a bad external URI or days of harvest is a 422 naming the field, and nothing is stored', async () => {
  const before = (await api.get('/api/taxonomy_term/season')).body.data.length;
  const spaced = await api.post('/api/taxonomy_term/season', {
    data: { type: 'taxonomy_term--season', attributes: { name: '2024', external_uri: ['not a uri'] } },
  });
  assert.equal(spaced.status, 422, spaced.text);
  assert.equal(spaced.body.errors[0].source.pointer, '/data/attributes/external_uri/0');
  assert.match(spaced.body.errors[0].detail, /external_uri.*not a valid URI/);
  const schemeless = await api.post('/api/taxonomy_term/season', {
    data: { type: 'taxonomy_term--season', attributes: { name: '2024', external_uri: ['www.example.org/2024'] } },
  });
  assert.equal(schemeless.status, 422, 'farmOS requires a scheme');
  assert.equal((await api.get('/api/taxonomy_term/season')).body.data.length, before);
  const zero = await api.post('/api/taxonomy_term/plant_type', {
    data: { type: 'taxonomy_term--plant_type', attributes: { name: 'Radish', harvest_days: 0 } },
  });
  assert.equal(zero.status, 422, zero.text);
  assert.equal(zero.body.errors[0].source.pointer, '/data/attributes/harvest_days');
  assert.match(zero.body.errors[0].detail, /harvest_days.*at least 1/);
});

test('products and product types round-trip with farmOS.js; a product without a type is refused', async () => {
  const jam = await farm.term.send(farm.term.create({ type: 'taxonomy_term--product_type', name: 'Jam' }));
  const jar = await farm.asset.send(
    farm.asset.create({ type: 'asset--product', name: 'Strawberry jam', product_type: ref(jam) }),
  );
  assert.equal(jar.relationships.product_type.id, jam.id);
  const found = await farm.asset.fetch({ filter: { type: 'asset--product', 'product_type.name': 'Jam' } });
  assert.deepEqual(
    found.data.map((a: any) => a.id),
    [jar.id],
  );
  const untyped = await api.post('/api/asset/product', {
    data: { type: 'asset--product', attributes: { name: 'Mystery jar' } },
  });
  assert.equal(untyped.status, 422);
  assert.match(untyped.body.errors[0].detail, /product_type/);
});

test("a term's image and file upload as an asset's do: stored under farm/term, used by the term, and the term keeps its own", async () => {
  const [material] = (await api.get('/api/taxonomy_term/material_type')).body.data;
  const compost =
    material ??
    (await api.create('taxonomy_term--material_type', {
      name: 'Compost',
      external_uri: ['https://example.org/compost'],
    }));
  const upload = (path: string, body: Buffer, filename: string) =>
    api.raw('POST', path, body as unknown as string, {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': `file; filename="${filename}"`,
      Accept: 'application/vnd.api+json',
    });
  const image = await upload(`/api/taxonomy_term/material_type/${compost.id}/image`, PNG, 'heap.png');
  assert.equal(image.status, 200, image.text);
  assert.equal(image.body.data.length, 1);
  const png = image.body.data[0];
  assert.match(png.attributes.uri.value, /^private:\/\/farm\/term\/\d{4}-\d{2}\/heap\.png$/);
  assert.equal(png.attributes.status, true, 'permanent: the term uses it');

  // A file uploaded on its own is temporary until a term names it.
  const sheet = await upload('/api/taxonomy_term/material_type/file', Buffer.from('n,p,k\n1,1,1\n'), 'analysis.csv');
  assert.equal(sheet.status, 201, sheet.text);
  assert.equal(sheet.body.data.attributes.status, false);
  const named = await api.patch(`/api/taxonomy_term/material_type/${compost.id}`, {
    data: {
      type: 'taxonomy_term--material_type',
      id: compost.id,
      relationships: { file: { data: [{ type: 'file--file', id: sheet.body.data.id }] } },
    },
  });
  assert.equal(named.status, 200, named.text);
  assert.equal((await api.get(`/api/file/file/${sheet.body.data.id}`)).body.data.attributes.status, true);

  const withImage = await api.get(`/api/taxonomy_term/material_type/${compost.id}?include=image,file`);
  assert.deepEqual(withImage.body.included.map((f: any) => f.attributes.filename).sort(), ['analysis.csv', 'heap.png']);
  const download = await fetch(`${server.url}${png.attributes.uri.url}`, {
    headers: { Authorization: `Bearer ${api.token}` },
  });
  assert.equal(download.status, 200);
  assert.deepEqual(Buffer.from(await download.arrayBuffer()), PNG);

  // As for an asset's files: deleting a file takes it out of the term; the term stays.
  assert.equal((await api.delete(`/api/file/file/${sheet.body.data.id}`)).status, 204);
  const after = await api.get(`/api/taxonomy_term/material_type/${compost.id}`);
  assert.equal(after.status, 200);
  assert.deepEqual(after.body.data.relationships.file.data, []);
  assert.equal(after.body.data.relationships.image.data.length, 1);
});

test("plant type's former bundle image field is the base one: a plant type's images read back", async () => {
  const basil = await api.create('taxonomy_term--plant_type', { name: 'Basil' });
  const res = await api.raw('POST', `/api/taxonomy_term/plant_type/${basil.id}/image`, PNG as unknown as string, {
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': 'file; filename="basil.png"',
  });
  assert.equal(res.status, 200, res.text);
  const reread = await api.get(`/api/taxonomy_term/plant_type/${basil.id}`);
  assert.equal(reread.body.data.relationships.image.data.length, 1);
  assert.equal(reread.body.data.relationships.image.data[0].id, res.body.data[0].id);
});

test('an organization has its assets: filtered and included by farm, kept while an asset names it, revisioned', async () => {
  const north = await api.create('organization--farm', { name: 'North Farm', notes: { value: 'Hill ground' } });
  assert.equal(north.type, 'organization--farm');
  assert.equal(north.attributes.archived, false);
  assert.equal(north.relationships.organization_type.data.type, 'organization_type--organization_type');
  assert.equal(north.relationships.uid.data.type, 'user--user', 'the author, as for assets');
  const south = await api.create('organization--farm', { name: 'South Farm' });

  // farmOS.js sends the asset's farm like any other relationship it does not know the type of.
  const field = await farm.asset.send(
    farm.asset.create({ type: 'asset--land', name: 'Top field', land_type: 'field', farm: ref(north) }),
  );
  assert.equal(field.relationships.farm.id, north.id);
  const herd = await api.create(
    'asset--animal',
    { name: 'Herd' },
    {
      animal_type: { data: ref(await api.create('taxonomy_term--animal_type', { name: 'Cattle' })) },
      farm: { data: ref(north) },
    },
  );
  await api.create('asset--land', { name: 'Bottom field', land_type: 'field' }, { farm: { data: ref(south) } });
  await api.create('asset--land', { name: 'Common', land_type: 'field' });

  const norths = await api.all(`/api/asset/land?filter[farm.id]=${north.id}`);
  assert.deepEqual(
    norths.map((a) => a.attributes.name),
    ['Top field'],
  );
  const byName = await api.all(`/api/asset/animal?filter[farm.name]=${encodeURIComponent('North Farm')}&include=farm`);
  assert.deepEqual(
    byName.map((a) => a.id),
    [herd.id],
  );
  const included = await api.get(`/api/asset/animal/${herd.id}?include=farm`);
  assert.equal(included.body.included[0].attributes.name, 'North Farm');
  assert.equal(included.body.included[0].attributes.notes.value, 'Hill ground');
  const related = await api.get(`/api/asset/animal/${herd.id}/farm`);
  assert.equal(related.body.data.id, north.id);
  const organizations = await api.all('/api/organization/farm?filter[archived]=0&sort=name');
  assert.deepEqual(
    organizations.map((o) => o.attributes.name),
    ['North Farm', 'South Farm'],
  );

  const csv = await api.get('/api/organization/farm?_format=csv');
  assert.equal(csv.status, 200, csv.text);
  assert.match(csv.text, /North Farm/, 'exported as other records are');
  assert.match(csv.text, /South Farm/);

  // Each save a revision, numbered per entity type (PostgreSQL: the organization sequence).
  const renamed = await api.patch(`/api/organization/farm/${north.id}`, {
    data: { type: 'organization--farm', id: north.id, attributes: { name: 'North Farm Ltd', archived: true } },
  });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.body.data.attributes.archived, true);
  assert.ok(
    renamed.body.data.attributes.drupal_internal__revision_id > north.attributes.drupal_internal__revision_id,
    'a new revision',
  );

  // Not deleted while an asset names it, as farmOS enforces for organizations.
  const refused = await api.delete(`/api/organization/farm/${north.id}`);
  assert.equal(refused.status, 403, refused.text);
  assert.match(refused.body.errors[0].detail, /asset/);
  for (const asset of [field, herd]) {
    const type = asset.type.split('--')[1];
    const cleared = await api.patch(`/api/asset/${type}/${asset.id}`, {
      data: { type: asset.type, id: asset.id, relationships: { farm: { data: null } } },
    });
    assert.equal(cleared.status, 200, cleared.text);
  }
  assert.equal((await api.delete(`/api/organization/farm/${north.id}`)).status, 204);
  assert.equal((await api.get(`/api/organization/farm/${north.id}`)).status, 404);
});

test('organizations follow the managed roles as assets do: viewers read, workers write', async () => {
  const viewer = await addUser(server, ['farm_viewer']);
  const worker = await addUser(server, ['farm_worker']);
  const asViewer = new Api(server.url, await passwordToken(server.url, viewer.name, viewer.password));
  const asWorker = new Api(server.url, await passwordToken(server.url, worker.name, worker.password));
  const body = { data: { type: 'organization--farm', attributes: { name: 'Worker Farm' } } };
  const refused = await asViewer.post('/api/organization/farm', body);
  assert.equal(refused.status, 403);
  const made = await asWorker.post('/api/organization/farm', body);
  assert.equal(made.status, 201, made.text);
  const seen = await asViewer.get(`/api/organization/farm/${made.body.data.id}`);
  assert.equal(seen.status, 200);
  assert.equal(seen.body.data.attributes.name, 'Worker Farm');
  const anonymous = await request(`${server.url}/api/organization/farm`);
  assert.equal(anonymous.status, 401);
});

test('the change feed lists an organization created and deleted', async () => {
  const start = (await api.get('/api/changes?since=0&page[limit]=1')).body.meta.cursor as string;
  const made = await api.create('organization--farm', { name: 'Fleeting Farm' });
  assert.equal((await api.delete(`/api/organization/farm/${made.id}`)).status, 204);
  let entries: any[] = [];
  for (let i = 0; i < 50 && !entries.some((e) => e.id === made.id && e.meta.deleted); i++) {
    const page = await api.get(`/api/changes?since=${encodeURIComponent(start)}&filter[type]=organization--farm`);
    assert.equal(page.status, 200, page.text);
    entries = page.body.data;
    if (!entries.some((e) => e.id === made.id)) await new Promise((r) => setTimeout(r, 50));
  }
  const entry = entries.find((e) => e.id === made.id);
  assert.ok(entry, 'the organization is in the feed');
  assert.equal(entry.type, 'organization--farm');
  assert.ok(entry.meta.deleted, 'as a tombstone once deleted');
});
