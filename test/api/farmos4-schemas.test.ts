// The farmOS 4.x shape's JSON Schemas (issue 39): `/api/schema` and, for every resource type, the
// resource, individual, collection and related-resource schemas, served on the 4.x base and made
// from the same mapping data as its documents. Each is a valid JSON Schema (2019-09, the draft
// both shapes declare) and keeps farmOS 4.x's rules: allowed values as `oneOf`/`anyOf` of `const`
// and `title` (farmOS 3.0), a log's `timestamp` required, no asset `status`, a boolean `archived`
// and the time in `last_archived`, `is_sterile`, and a log status that may be `abandoned`. A real
// 4.x document of every bundle validates against its schema. The 2.x shape's schemas are
// test/api/schema-parity.test.ts's, unchanged.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv2019, type ValidateFunction } from 'ajv/dist/2019.js';
import addFormatsPlugin from 'ajv-formats';
import { ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { startFarmos4Server } from '../support/farmos4.ts';
import { Api, bundlesServed, collectionPath, createFixture, model } from '../support/fixtures.ts';

let server: TestServer;
let base4: string;
let api2: Api;
let api4: Api;

before(async () => {
  ({ server, hostname: base4 } = await startFarmos4Server());
  const token = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  api2 = new Api(server.url, token);
  api4 = new Api(base4, token);
});
after(() => server?.close());

const ajv = new Ajv2019({ strict: false, allErrors: true });
const addFormats = ((addFormatsPlugin as unknown as { default?: unknown }).default ?? addFormatsPlugin) as (
  a: Ajv2019,
) => Ajv2019;
addFormats(ajv);

const BUNDLES = bundlesServed();

/** A served schema document, checked against JSON Schema 2019-09's meta-schema (hyper-schema keywords such as `links` are annotations there). */
async function assertValidSchema(path: string): Promise<any> {
  const res = await api4.get(path);
  assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 300)}`);
  const doc = res.body;
  assert.equal(doc.$schema, 'https://json-schema.org/draft/2019-09/hyper-schema', path);
  const { $schema: _hyper, ...rest } = doc;
  const ok = ajv.validateSchema({ $schema: 'https://json-schema.org/draft/2019-09/schema', ...rest });
  assert.ok(ok, `${path} is not a valid 2019-09 schema: ${JSON.stringify(ajv.errors?.slice(0, 5))}`);
  return doc;
}

test('/api/schema and every resource, individual, collection and related schema of the 4.x shape are valid JSON Schemas naming the 4.x base', async () => {
  const index = await assertValidSchema('/api/schema');
  assert.equal(index.$id, `${base4}/api/schema`);
  const links = index.allOf[1].links as Array<{ targetSchema: { $ref: string } }>;
  assert.equal(links.length, BUNDLES.length);
  for (const link of links) assert.ok(link.targetSchema.$ref.startsWith(`${base4}/api/`), link.targetSchema.$ref);
  for (const bundle of BUNDLES) {
    const path = collectionPath(bundle.type);
    const resource = await assertValidSchema(`${path}/resource/schema`);
    assert.equal(resource.$id, `${base4}${path}/resource/schema`);
    await assertValidSchema(`${path}/schema`);
    await assertValidSchema(`${path}/collection/schema`);
    // Every relationship but the bundle's own (log_type…), which has no related route (as in 2.x).
    const bundleKey = model.entityTypes[bundle.entityType]!.bundleKey;
    for (const name of Object.keys(resource.definitions.relationships.properties)) {
      if (name === bundleKey) continue;
      const related = `${path}/resource/relationships/${name}/related/schema`;
      // A reference to configuration (a user's roles) has no related route in either shape.
      if ((await api2.get(related)).status === 404) continue;
      await assertValidSchema(related);
    }
  }
});

async function resourceSchema(api: Api, type: string): Promise<any> {
  const res = await api.get(`${collectionPath(type)}/resource/schema`);
  assert.equal(res.status, 200, `${type}: ${res.text.slice(0, 300)}`);
  return res.body.definitions;
}

test('4.x rules: no asset status, archived a boolean, last_archived the time, is_sterile; 2.x keeps status and is_castrated', async () => {
  for (const bundle of BUNDLES.filter((b) => b.entityType === 'asset')) {
    const four = await resourceSchema(api4, bundle.type);
    const attributes = four.attributes.properties;
    assert.equal(attributes.status, undefined, `${bundle.type} has no status in 4.x`);
    assert.equal(attributes.archived.type, 'boolean', `${bundle.type}.archived`);
    assert.equal(attributes.archived.oneOf, undefined, 'a boolean lists no values');
    assert.equal(attributes.last_archived.type, 'string');
    assert.equal(attributes.last_archived.format, 'date-time');
    // Titled as farmOS 4.x's fields are (asset.module's archived, its update hook's last_archived).
    assert.equal(attributes.archived.title, 'Archived');
    assert.equal(attributes.archived.description, 'Whether the asset is archived.');
    assert.equal(attributes.last_archived.title, 'Last Archived');
    assert.ok(!four.attributes.required.includes('status'));
    const two = await resourceSchema(api2, bundle.type);
    assert.deepEqual(
      two.attributes.properties.status.oneOf.map((v: any) => v.const),
      ['active', 'archived'],
    );
    assert.equal(two.attributes.properties.archived.format, 'date-time');
    assert.equal(two.attributes.properties.last_archived, undefined);
  }
  const animal4 = (await resourceSchema(api4, 'asset--animal')).attributes.properties;
  assert.equal(animal4.is_sterile.type, 'boolean');
  assert.equal(animal4.is_sterile.title, 'Sterile', "farm_animal's is_sterile label");
  assert.equal(animal4.is_castrated, undefined);
  const animal2 = (await resourceSchema(api2, 'asset--animal')).attributes.properties;
  assert.equal(animal2.is_castrated.type, 'boolean');
  assert.equal(animal2.is_castrated.title, 'Castrated');
  assert.equal(animal2.is_sterile, undefined);
});

test('4.x rules: every log requires timestamp, and its status lists abandoned as oneOf const and title; 2.x does neither', async () => {
  for (const bundle of BUNDLES.filter((b) => b.entityType === 'log')) {
    const four = await resourceSchema(api4, bundle.type);
    assert.ok(four.attributes.required.includes('timestamp'), `${bundle.type} requires timestamp`);
    assert.deepEqual(four.attributes.properties.status.oneOf, [
      { const: 'pending', title: 'Pending' },
      { const: 'done', title: 'Done' },
      { const: 'abandoned', title: 'Abandoned' },
    ]);
    // farmOS 3.2 (PR #782): a log sent without a status is done.
    assert.equal(four.attributes.properties.status.default, 'done');
    const two = await resourceSchema(api2, bundle.type);
    assert.ok(!two.attributes.required.includes('timestamp'));
    assert.deepEqual(
      two.attributes.properties.status.oneOf.map((v: any) => v.const),
      ['pending', 'done'],
    );
    assert.equal(two.attributes.properties.status.default, 'pending');
  }
});

test('4.x rules: allowed values are oneOf (one value) or anyOf (several) of const and title, wherever the model lists them', async () => {
  let seen = 0;
  for (const bundle of BUNDLES) {
    const four = await resourceSchema(api4, bundle.type);
    for (const field of bundle.fields) {
      if (!field.allowedValues || field.kind !== 'attribute' || field.type === 'id_tag') continue;
      const name = Object.keys(four.attributes.properties).find(
        (n) => n === field.name || four.attributes.properties[n].title === field.label,
      );
      if (!name) continue; // renamed into a boolean (an asset's status): checked above
      const prop = four.attributes.properties[name];
      if (prop.type === 'boolean') continue;
      const list = field.multiple ? prop.items.anyOf : prop.oneOf;
      assert.ok(Array.isArray(list) && list.length > 0, `${bundle.type}.${name}: ${JSON.stringify(prop)}`);
      for (const item of list) {
        assert.deepEqual(Object.keys(item).sort(), ['const', 'title'], `${bundle.type}.${name}`);
        assert.equal(typeof item.title, 'string');
      }
      seen++;
    }
  }
  assert.ok(seen > 10, `fields with allowed values checked: ${seen}`);
});

/** A validator for a resource object from a served resource schema's definitions (as crud-coverage.test.ts composes them). */
function validatorOf(defs: any): ValidateFunction {
  const copy = structuredClone(defs);
  // An empty single value renders as null while the schema keeps a plain `type` (farmOS.js reads `type`).
  const required = new Set<string>(copy.attributes.required ?? []);
  for (const [name, prop] of Object.entries<any>(copy.attributes.properties))
    if (!required.has(name)) copy.attributes.properties[name] = { anyOf: [prop, { type: 'null' }] };
  for (const rel of Object.values<any>(copy.relationships.properties ?? {}))
    if (rel.properties?.data?.type === 'object')
      rel.properties.data = { anyOf: [rel.properties.data, { type: 'null' }] };
  return ajv.compile({
    type: 'object',
    required: ['type', 'id', 'attributes'],
    properties: {
      type: copy.type,
      id: { type: 'string', format: 'uuid' },
      links: { type: 'object' },
      attributes: copy.attributes,
      relationships: copy.relationships,
    },
  });
}

/** Identifier meta and Drupal's "virtual" root parent are left out, as crud-coverage.test.ts explains. */
function withoutIdentifierMeta(resource: any): any {
  const copy = structuredClone(resource);
  for (const rel of Object.values<any>(copy.relationships ?? {})) {
    if (Array.isArray(rel.data)) rel.data = rel.data.filter((item: any) => item?.id !== 'virtual');
    for (const item of Array.isArray(rel.data) ? rel.data : rel.data ? [rel.data] : []) delete item.meta;
  }
  return copy;
}

test('a real 4.x document of every bundle validates against its 4.x resource schema', async () => {
  for (const bundle of BUNDLES) {
    if (bundle.entityType === 'file') continue; // files are made by uploading bytes: files.test.ts
    const made = bundle.type === 'user--user' ? null : await createFixture(api2, bundle.type, { full: true });
    const path = made ? `${collectionPath(bundle.type)}/${made.id}` : `${collectionPath(bundle.type)}?page[limit]=1`;
    const res = await api4.get(path);
    assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 300)}`);
    const resource = Array.isArray(res.body.data) ? res.body.data[0] : res.body.data;
    const validate = validatorOf(await resourceSchema(api4, bundle.type));
    assert.ok(
      validate(withoutIdentifierMeta(resource)),
      `${bundle.type} does not validate against its 4.x schema: ${JSON.stringify(validate.errors?.slice(0, 5))}`,
    );
  }
});
