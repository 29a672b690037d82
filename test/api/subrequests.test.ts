// POST /subrequests?_format=json: the blueprints farmOS.js and farmOS.py send (clients.md §1.7,
// §2.1, §3; farmos-behaviour.md §8.4; issue 4 item 11), each sub-request checked as if sent alone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken, JSONAPI, type ApiResponse } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';
import { evaluateJsonPath, JsonPathSyntaxError, parseJsonPath } from '../../runtime/jsonapi/subrequests/jsonpath.ts';

let server: TestServer;
let adminToken: string;
let viewerToken: string;

before(async () => {
  server = await startTestServer();
  await createUser(server.ctx.db.knex, { name: 'vic', password: 'vic-password', roles: ['farm_viewer'] });
  adminToken = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  viewerToken = await passwordToken(server.url, 'vic', 'vic-password');
});
after(() => server.close());

const HEADERS = { Accept: JSONAPI, 'Content-Type': JSONAPI };

interface Entry {
  headers: { status: [number]; 'content-id': [string]; 'content-type'?: [string]; [name: string]: unknown };
  body: string;
}

/** POST a blueprint the way farmOS.js does (axios: Content-Type application/vnd.api+json). */
function send(
  blueprint: unknown,
  options: { token?: string; contentType?: string; accept?: string; query?: string } = {},
): Promise<ApiResponse<Record<string, Entry>>> {
  return request(`${server.url}/subrequests${options.query ?? '?_format=json'}`, {
    method: 'POST',
    token: options.token ?? adminToken,
    headers: { 'Content-Type': options.contentType ?? JSONAPI, Accept: options.accept ?? JSONAPI },
    body: typeof blueprint === 'string' ? blueprint : JSON.stringify(blueprint),
  });
}

/** The parsed body of one sub-response (every body is a JSON string, as farmOS.js expects). */
function bodyOf(res: ApiResponse<Record<string, Entry>>, contentId: string): any {
  const entry = res.body[contentId];
  assert.ok(entry, `no sub-response "${contentId}" in ${Object.keys(res.body ?? {}).join(', ')}`);
  assert.equal(typeof entry.body, 'string', `${contentId}: body is a string`);
  return JSON.parse(entry.body);
}

function statusOf(res: ApiResponse<Record<string, Entry>>, contentId: string): number {
  const entry = res.body[contentId];
  assert.ok(entry, `no sub-response "${contentId}" in ${Object.keys(res.body ?? {}).join(', ')}`);
  // As Drupal's subrequests module sends them, and farmOS.py's tests read them: `status: [201]`.
  assert.ok(
    Array.isArray(entry.headers.status) && typeof entry.headers.status[0] === 'number',
    `${contentId}: headers.status is [integer]`,
  );
  return entry.headers.status[0];
}

async function get(path: string, token = adminToken): Promise<ApiResponse> {
  return request(`${server.url}${path}`, { token });
}

async function createEquipment(name: string): Promise<string> {
  const res = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token: adminToken,
    json: { data: { type: 'asset--equipment', attributes: { name } } },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data.id;
}

// The requestIds farmOS.js builds for `farm.log.send(log, {subrequest: {quantity: {$create: {…,
// units: {$find: {type: 'taxonomy_term--unit', name}, $limit: 1, $createIfNotFound: true}}}}})`,
// captured from farmos@2.0.0-beta.16.
const ROOT = '$ROOT::$create:log--activity';
const QUANTITY = `${ROOT}.quantity::$create:quantity--standard`;
const FIND_UNIT = `${QUANTITY}.units::$find:taxonomy_term--unit`;
const CREATE_UNIT = `${QUANTITY}.units::$createIfNotFound:taxonomy_term--unit`;
const POSTHOC = `${ROOT}.quantity`;

function findUnitBlueprint(name: string) {
  return [
    {
      action: 'view',
      headers: HEADERS,
      requestId: FIND_UNIT,
      uri: `/api/taxonomy_term/unit?filter[name-0-filter][condition][path]=name&filter[name-0-filter][condition][operator]=%3D&filter[name-0-filter][condition][value]=${name}&page[limit]=1`,
    },
  ];
}

function logBody(id: string, name: string): string {
  return JSON.stringify({
    data: {
      id,
      type: 'log--activity',
      attributes: {
        name,
        timestamp: 1714557600,
        status: 'done',
        data: '',
        flag: [],
        notes: null,
        geometry: null,
        is_movement: false,
        is_group_assignment: false,
      },
      relationships: {
        asset: { data: [] },
        category: { data: [] },
        file: { data: [] },
        image: { data: [] },
        owner: { data: [] },
        quantity: { data: [] },
        location: { data: [] },
        equipment: { data: [] },
        group: { data: [] },
      },
    },
  });
}

function quantityBody(id: string, units: { id: string; type: string }): string {
  return JSON.stringify({
    data: {
      id,
      type: 'quantity--standard',
      attributes: { measure: 'weight', value: null, label: 'Harvest weight', inventory_adjustment: '' },
      relationships: { inventory_asset: { data: null }, units: { data: units } },
    },
  });
}

/** farmOS.js's post hoc request that adds the new quantity to the new log's relationship. */
function posthocBlueprint() {
  return {
    requestId: POSTHOC,
    uri: `/api/log/activity/{{${ROOT}.body@$.data.id}}/relationships/quantity`,
    waitFor: [QUANTITY, ROOT],
    action: 'create',
    headers: HEADERS,
    body: JSON.stringify({
      data: [
        {
          id: `{{${QUANTITY}.body@$.data.id}}`,
          type: `{{${QUANTITY}.body@$.data.type}}`,
          meta: {
            target_revision_id: `{{${QUANTITY}.body@$.data.attributes.drupal_internal__revision_id}}`,
            drupal_internal__target_id: `{{${QUANTITY}.body@$.data.attributes.drupal_internal__id}}`,
          },
        },
      ],
    }),
  };
}

test('farmOS.js: a quantity with a unit found by $find and a log referencing it, in two batches', async () => {
  const unit = await request(`${server.url}/api/taxonomy_term/unit`, {
    method: 'POST',
    token: adminToken,
    json: { data: { type: 'taxonomy_term--unit', attributes: { name: 'kg' } } },
  });
  assert.equal(unit.status, 201, unit.text);
  const unitId: string = unit.body.data.id;

  // Batch 1: the $find.
  const found = await send(findUnitBlueprint('kg'));
  assert.equal(found.status, 200, found.text);
  assert.match(found.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(found.body), [FIND_UNIT]);
  assert.equal(statusOf(found, FIND_UNIT), 200);
  assert.deepEqual(found.body[FIND_UNIT]!.headers['content-id'], [`<${FIND_UNIT}>`]);
  assert.match(String(found.body[FIND_UNIT]!.headers['content-type']), /application\/vnd\.api\+json/);
  const units = bodyOf(found, FIND_UNIT);
  assert.deepEqual(
    units.data.map((t: any) => t.id),
    [unitId],
  );

  // Batch 2: the quantity with the unit found, the log, and the post hoc relationship write.
  const quantityId = randomUUID();
  const logId = randomUUID();
  const res = await send([
    {
      action: 'create',
      body: quantityBody(quantityId, { id: unitId, type: 'taxonomy_term--unit' }),
      headers: HEADERS,
      requestId: QUANTITY,
      uri: '/api/quantity/standard',
      waitFor: [],
    },
    {
      action: 'create',
      body: logBody(logId, 'Weigh the harvest'),
      headers: HEADERS,
      requestId: ROOT,
      uri: '/api/log/activity',
      waitFor: [],
    },
    posthocBlueprint(),
  ]);
  assert.equal(res.status, 200, res.text);
  // Tokens in the uri and then the body make a copy named as Drupal names it, even for one value.
  const posthoc = `${POSTHOC}#uri{0}#body{0}`;
  assert.deepEqual(Object.keys(res.body), [QUANTITY, ROOT, posthoc]);
  assert.equal(statusOf(res, QUANTITY), 201);
  assert.equal(statusOf(res, ROOT), 201);
  assert.deepEqual(res.body[ROOT]!.headers.location, [`${server.url}/api/log/activity/${logId}`]);
  assert.equal(bodyOf(res, QUANTITY).data.id, quantityId);
  assert.equal(bodyOf(res, ROOT).data.attributes.name, 'Weigh the harvest');
  assert.equal(statusOf(res, posthoc), 204);
  assert.equal(res.body[posthoc]!.body, 'null', 'an empty body is still a string JSON.parse accepts');
  assert.equal(bodyOf(res, posthoc), null);

  const log = await get(`/api/log/activity/${logId}`);
  assert.deepEqual(
    log.body.data.relationships.quantity.data.map((q: any) => q.id),
    [quantityId],
  );
  const quantity = await get(`/api/quantity/standard/${quantityId}`);
  assert.equal(quantity.body.data.relationships.units.data.id, unitId);
});

test('farmOS.js: $createIfNotFound and a quantity that reads the new unit from the same batch', async () => {
  const found = await send(findUnitBlueprint('lb'));
  assert.deepEqual(bodyOf(found, FIND_UNIT).data, []);

  const unitId = randomUUID();
  const quantityId = randomUUID();
  const logId = randomUUID();
  const res = await send([
    {
      action: 'create',
      body: JSON.stringify({
        data: {
          id: unitId,
          type: 'taxonomy_term--unit',
          attributes: { status: true, name: 'lb', description: null, weight: 0 },
          relationships: { vid: { data: null }, parent: { data: [] } },
        },
      }),
      headers: HEADERS,
      requestId: CREATE_UNIT,
      uri: '/api/taxonomy_term/unit',
    },
    {
      action: 'create',
      body: quantityBody(quantityId, { id: `{{${CREATE_UNIT}.body@$.data.id}}`, type: 'taxonomy_term--unit' }),
      headers: HEADERS,
      requestId: QUANTITY,
      uri: '/api/quantity/standard',
      waitFor: [CREATE_UNIT],
    },
    {
      action: 'create',
      body: logBody(logId, 'Weigh again'),
      headers: HEADERS,
      requestId: ROOT,
      uri: '/api/log/activity',
      waitFor: [],
    },
    posthocBlueprint(),
  ]);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.body), [CREATE_UNIT, `${QUANTITY}#body{0}`, ROOT, `${POSTHOC}#uri{0}#body{0}`]);
  assert.deepEqual(
    Object.values(res.body).map((e) => e.headers.status[0]),
    [201, 201, 201, 204],
  );
  const quantity = await get(`/api/quantity/standard/${quantityId}`);
  assert.equal(quantity.body.data.relationships.units.data.id, unitId);
  const log = await get(`/api/log/activity/${logId}`);
  assert.deepEqual(
    log.body.data.relationships.quantity.data.map((q: any) => q.id),
    [quantityId],
  );
});

test('the published farmOS.js client sends a log with a quantity through subrequests', async () => {
  const require = createRequire(import.meta.url);
  const farmOS = require('farmos').default;
  let token: unknown = null;
  const farm = farmOS({
    remote: { host: server.url, clientId: 'farm', getToken: () => token, setToken: (t: unknown) => (token = t) },
  });
  await farm.remote.authorize(ADMIN.name, ADMIN.password);
  for (const [entity, bundle] of [
    ['log', 'activity'],
    ['quantity', 'standard'],
    ['taxonomy_term', 'unit'],
  ])
    await farm.schema.fetch(entity, bundle);
  const log = farm.log.create({ type: 'log--activity', name: 'Sent by farmOS.js', status: 'done' });
  const sent = await farm.log.send(log, {
    subrequest: {
      quantity: {
        $create: {
          type: 'quantity--standard',
          label: 'Bushels',
          measure: 'count',
          units: { $find: { type: 'taxonomy_term--unit', name: 'bushel' }, $limit: 1, $createIfNotFound: true },
        },
      },
    },
  });
  assert.equal(sent.length, 1);
  assert.equal(sent[0].id, log.id);
  const stored = await get(`/api/log/activity/${log.id}?include=quantity,quantity.units`);
  assert.equal(stored.status, 200);
  assert.equal(stored.body.data.attributes.name, 'Sent by farmOS.js');
  const [quantity] = stored.body.data.relationships.quantity.data;
  assert.ok(quantity, 'the quantity was attached to the log');
  const included = new Map(stored.body.included.map((r: any) => [r.id, r]));
  const q: any = included.get(quantity.id);
  assert.equal(q.attributes.label, 'Bushels');
  assert.equal((included.get(q.relationships.units.data.id) as any).attributes.name, 'bushel');
});

test('farmOS.py: absolute uris, Content-Type application/json, tokens and waitFor', async () => {
  // farmOS.py builds `uri = f"{hostname}/{endpoint}"`; the host is never contacted, only the path
  // and query are used, so even a host that does not exist works.
  const host = 'http://farm.example.invalid:9';
  const blueprint = [
    {
      action: 'create',
      uri: `${host}/api/taxonomy_term/plant_type`,
      requestId: 'create-plant-type',
      body: JSON.stringify({ data: { type: 'taxonomy_term--plant_type', attributes: { name: 'New plant type' } } }),
      headers: HEADERS,
    },
    {
      action: 'create',
      uri: `${host}/api/asset/plant`,
      requestId: 'create-asset',
      body: JSON.stringify({
        data: {
          type: 'asset--plant',
          attributes: { name: 'My new plant' },
          relationships: {
            plant_type: { data: [{ type: 'taxonomy_term--plant_type', id: '{{create-plant-type.body@$.data.id}}' }] },
          },
        },
      }),
      headers: HEADERS,
      waitFor: ['create-plant-type'],
    },
    {
      action: 'create',
      uri: `${host}/api/log/seeding`,
      requestId: 'create-log',
      body: JSON.stringify({
        data: {
          type: 'log--seeding',
          attributes: { name: 'Seeding my new plant' },
          relationships: { asset: { data: [{ type: 'asset--plant', id: '{{create-asset.body@$.data.id}}' }] } },
        },
      }),
      headers: HEADERS,
      waitFor: ['create-asset'],
    },
  ];
  const res = await send(blueprint, { contentType: 'application/json', accept: '*/*' });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.body), ['create-plant-type', 'create-asset#body{0}', 'create-log#body{0}']);
  for (const entry of Object.values(res.body)) assert.deepEqual(entry.headers.status, [201], entry.body);
  const plantType = bodyOf(res, 'create-plant-type').data;
  const asset = bodyOf(res, 'create-asset#body{0}').data;
  const log = bodyOf(res, 'create-log#body{0}').data;
  assert.equal(asset.attributes.name, 'My new plant');
  assert.deepEqual(
    asset.relationships.plant_type.data.map((r: any) => r.id),
    [plantType.id],
  );
  const stored = await get(`/api/log/seeding/${log.id}`);
  assert.equal(stored.body.data.attributes.name, 'Seeding my new plant');
  assert.deepEqual(
    stored.body.data.relationships.asset.data.map((r: any) => r.id),
    [asset.id],
  );
  assert.ok(!res.text.includes('farm.example.invalid'), 'links name this server, not the host in the uri');
});

test('a [*] token makes one copy per value; a token on an expanded request reads every copy', async () => {
  const tag = randomUUID().slice(0, 8);
  const assets = [
    await createEquipment(`Tractor ${tag} 1`),
    await createEquipment(`Tractor ${tag} 2`),
    await createEquipment(`Tractor ${tag} 3`),
  ];
  const res = await send([
    {
      requestId: 'find',
      action: 'view',
      uri: `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=Tractor%20${tag}&filter[name][path]=name&sort=name`,
    },
    {
      requestId: 'logs',
      action: 'create',
      uri: '/api/log/maintenance',
      waitFor: ['find'],
      body: JSON.stringify({
        data: {
          type: 'log--maintenance',
          attributes: { name: `Service ${tag}`, status: 'done' },
          relationships: { asset: { data: [{ type: 'asset--equipment', id: '{{find.body@$.data[*].id}}' }] } },
        },
      }),
    },
    // `logs` was answered three times: this reads the id from each answer and deletes each log.
    { requestId: 'cleanup', action: 'delete', uri: '/api/log/maintenance/{{logs.body@$.data.id}}', waitFor: ['logs'] },
  ]);
  assert.equal(res.status, 200, res.text);
  assert.equal(bodyOf(res, 'find').data.length, 3);
  const copies = ['logs#body{0}', 'logs#body{1}', 'logs#body{2}'];
  const deletes = ['cleanup#uri{0}', 'cleanup#uri{1}', 'cleanup#uri{2}'];
  assert.deepEqual(Object.keys(res.body), ['find', ...copies, ...deletes]);
  const created = copies.map((k) => {
    assert.equal(statusOf(res, k), 201, res.body[k]!.body);
    return bodyOf(res, k).data;
  });
  assert.deepEqual(
    created.map((l: any) => l.relationships.asset.data[0].id),
    assets,
    'one log per asset found, in the order found',
  );
  for (const k of deletes) {
    assert.equal(statusOf(res, k), 204);
    assert.equal(res.body[k]!.body, 'null');
  }
  for (const l of created) assert.equal((await get(`/api/log/maintenance/${l.id}`)).status, 404);
});

test('several multi-valued tokens make one copy per combination; a repeated token is one token', async () => {
  const tag = randomUUID().slice(0, 8);
  const ids = [await createEquipment(`Plough ${tag} 1`), await createEquipment(`Plough ${tag} 2`)];
  const res = await send([
    {
      requestId: 'find',
      action: 'view',
      uri: `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=Plough%20${tag}&filter[name][path]=name&sort=name`,
    },
    {
      requestId: 'pairs',
      action: 'create',
      uri: '/api/log/activity',
      waitFor: ['find'],
      body: JSON.stringify({
        data: {
          type: 'log--activity',
          attributes: {
            name: '{{find.body@$.data[*].attributes.name}} / {{find.body@$.data[*].attributes.name}}',
            status: 'done',
          },
          relationships: { asset: { data: [{ type: 'asset--equipment', id: '{{find.body@$.data[*].id}}' }] } },
        },
      }),
    },
  ]);
  assert.equal(res.status, 200, res.text);
  const keys = Object.keys(res.body).filter((k) => k !== 'find');
  assert.deepEqual(keys, ['pairs#body{0}', 'pairs#body{1}', 'pairs#body{2}', 'pairs#body{3}']);
  const combos = keys.map((k) => {
    assert.equal(statusOf(res, k), 201, res.body[k]!.body);
    const log = bodyOf(res, k).data;
    return `${log.attributes.name} → ${ids.indexOf(log.relationships.asset.data[0].id)}`;
  });
  assert.deepEqual(combos, [
    `Plough ${tag} 1 / Plough ${tag} 1 → 0`,
    `Plough ${tag} 1 / Plough ${tag} 1 → 1`,
    `Plough ${tag} 2 / Plough ${tag} 2 → 0`,
    `Plough ${tag} 2 / Plough ${tag} 2 → 1`,
  ]);
});

test('a [*] token in the uri updates every record found', async () => {
  const tag = randomUUID().slice(0, 8);
  const ids = [await createEquipment(`Mower ${tag} a`), await createEquipment(`Mower ${tag} b`)];
  const res = await send([
    {
      requestId: 'find',
      action: 'view',
      uri: `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=Mower%20${tag}&filter[name][path]=name&sort=name`,
    },
    {
      requestId: 'archive',
      action: 'update',
      uri: '/api/asset/equipment/{{find.body@$.data[*].id}}',
      waitFor: ['find'],
      body: '{"data":{"type":"asset--equipment","attributes":{"notes":{"value":"serviced"}}}}',
    },
  ]);
  assert.equal(res.status, 200, res.text);
  // The body carries no data.id, which PATCH requires: each copy is checked as if sent alone.
  assert.deepEqual(Object.keys(res.body), ['find', 'archive#uri{0}', 'archive#uri{1}']);
  for (const k of ['archive#uri{0}', 'archive#uri{1}']) {
    assert.ok(statusOf(res, k) >= 400 && statusOf(res, k) < 500, res.body[k]!.body);
    assert.ok(bodyOf(res, k).errors.length > 0);
  }
  const ok = await send([
    {
      requestId: 'find',
      action: 'view',
      uri: `/api/asset/equipment?filter[name][operator]=STARTS_WITH&filter[name][value]=Mower%20${tag}&filter[name][path]=name&sort=name`,
    },
    {
      requestId: 'note',
      action: 'update',
      uri: '/api/asset/equipment/{{find.body@$.data[*].id}}',
      waitFor: ['find'],
      body: '{"data":{"type":"asset--equipment","id":"{{find.body@$.data[0].id}}","attributes":{"notes":{"value":"serviced"}}}}',
    },
  ]);
  // uri copies × body copies: the first asset is updated, the second one's body names the first id.
  assert.deepEqual(Object.keys(ok.body), ['find', 'note#uri{0}#body{0}', 'note#uri{1}#body{0}']);
  assert.equal(statusOf(ok, 'note#uri{0}#body{0}'), 200);
  assert.equal(bodyOf(ok, 'note#uri{0}#body{0}').data.id, ids[0]);
  assert.ok(statusOf(ok, 'note#uri{1}#body{0}') >= 400);
  assert.equal((await get(`/api/asset/equipment/${ids[0]}`)).body.data.attributes.notes.value, 'serviced');
  assert.equal((await get(`/api/asset/equipment/${ids[1]}`)).body.data.attributes.notes, null);
});

test('waitFor orders the sub-requests whatever their place in the blueprint', async () => {
  const id = randomUUID();
  const res = await send([
    { requestId: 'check', action: 'view', uri: `/api/asset/equipment/${id}`, waitFor: ['remove'] },
    { requestId: 'remove', action: 'delete', uri: `/api/asset/equipment/${id}`, waitFor: ['rename'] },
    {
      requestId: 'rename',
      action: 'update',
      uri: `/api/asset/equipment/${id}`,
      waitFor: ['add'],
      body: JSON.stringify({ data: { type: 'asset--equipment', id, attributes: { name: 'Renamed' } } }),
    },
    {
      requestId: 'add',
      action: 'create',
      uri: '/api/asset/equipment',
      body: JSON.stringify({ data: { type: 'asset--equipment', id, attributes: { name: 'Seeder' } } }),
    },
    { requestId: 'exists', action: 'exists', uri: '/api/asset/equipment' },
  ]);
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.body), ['add', 'rename', 'remove', 'check', 'exists']);
  assert.deepEqual(
    Object.values(res.body).map((e) => e.headers.status[0]),
    [201, 200, 204, 404, 200],
  );
  assert.equal(bodyOf(res, 'rename').data.attributes.name, 'Renamed');
  assert.equal(bodyOf(res, 'check').errors[0].status, '404');
  assert.equal(res.body.exists!.body, 'null', 'a HEAD answer has no body');
});

test('a sub-request the caller may not make gets its own 403 inside a 200, and nothing is written', async () => {
  const name = `Viewer tractor ${randomUUID().slice(0, 8)}`;
  const res = await send(
    [
      { requestId: 'list', action: 'view', uri: '/api/asset/equipment?page[limit]=1' },
      {
        requestId: 'add',
        action: 'create',
        uri: '/api/asset/equipment',
        body: JSON.stringify({ data: { type: 'asset--equipment', attributes: { name } } }),
      },
      {
        requestId: 'log',
        action: 'create',
        uri: '/api/log/activity',
        waitFor: ['add'],
        body: JSON.stringify({
          data: {
            type: 'log--activity',
            attributes: { name: 'never' },
            relationships: { asset: { data: [{ type: 'asset--equipment', id: '{{add.body@$.data.id}}' }] } },
          },
        }),
      },
    ],
    { token: viewerToken },
  );
  assert.equal(res.status, 200, res.text);
  assert.equal(statusOf(res, 'list'), 200);
  assert.equal(statusOf(res, 'add'), 403);
  const denied = bodyOf(res, 'add');
  assert.equal(denied.errors[0].status, '403');
  assert.match(String(res.body.add!.headers['content-type']), /application\/vnd\.api\+json/);
  assert.equal(statusOf(res, 'log'), 424);
  const failed = bodyOf(res, 'log').errors[0];
  assert.equal(failed.status, '424');
  assert.equal(failed.title, 'Failed Dependency');
  assert.match(failed.detail, /"add"/);
  const found = await get(`/api/asset/equipment?filter[name]=${encodeURIComponent(name)}`);
  assert.deepEqual(found.body.data, []);
  const logs = await get('/api/log/activity?filter[name]=never');
  assert.deepEqual(logs.body.data, []);
});

test('what depends on a failed sub-request is not sent; what does not is', async () => {
  const name = `Orphan ${randomUUID().slice(0, 8)}`;
  const res = await send([
    {
      requestId: 'bad',
      action: 'create',
      uri: '/api/asset/equipment',
      body: JSON.stringify({ data: { type: 'asset--equipment', attributes: { name: '' } } }),
    },
    {
      requestId: 'child',
      action: 'create',
      uri: '/api/log/activity',
      waitFor: ['bad'],
      body: JSON.stringify({ data: { type: 'log--activity', attributes: { name } } }),
    },
    { requestId: 'grandchild', action: 'view', uri: '/api/log/activity', waitFor: ['child'] },
    { requestId: 'by-token', action: 'view', uri: '/api/asset/equipment/{{bad.body@$.data.id}}' },
    { requestId: 'independent', action: 'view', uri: '/api/user/user' },
  ]);
  assert.equal(res.status, 200, res.text);
  assert.equal(statusOf(res, 'bad'), 422);
  assert.equal(bodyOf(res, 'bad').errors[0].source.pointer, '/data/attributes/name');
  assert.equal(statusOf(res, 'child'), 424);
  assert.equal(statusOf(res, 'grandchild'), 424);
  assert.match(bodyOf(res, 'grandchild').errors[0].detail, /"child"/);
  assert.equal(statusOf(res, 'by-token'), 424, 'a token is a dependency too');
  assert.equal(statusOf(res, 'independent'), 200);
  assert.deepEqual((await get(`/api/log/activity?filter[name]=${encodeURIComponent(name)}`)).body.data, []);
});

test('a token that finds nothing, or finds something that is not a string, fails that sub-request', async () => {
  const res = await send([
    { requestId: 'users', action: 'view', uri: '/api/user/user' },
    { requestId: 'one', action: 'view', uri: '/api/user/user/{{users.body@$.data.id}}', waitFor: ['users'] },
    {
      requestId: 'object',
      action: 'view',
      uri: '/api/user/user/{{users.body@$.data[0].attributes}}',
      waitFor: ['users'],
    },
  ]);
  assert.equal(res.status, 200, res.text);
  // `$.data.id` on a collection selects nothing (as in Drupal's JSONPath): use `$.data[*].id`.
  assert.equal(statusOf(res, 'one'), 400);
  assert.match(bodyOf(res, 'one').errors[0].detail, /found no value/);
  assert.equal(statusOf(res, 'object'), 400);
  assert.match(bodyOf(res, 'object').errors[0].detail, /strings or numbers/);
});

test('relative and absolute uris address this server; anything outside /api is refused', async () => {
  const tag = randomUUID().slice(0, 8);
  const id = await createEquipment(`Baler ${tag}`);
  const res = await send([
    { requestId: 'slash', action: 'view', uri: `/api/asset/equipment/${id}` },
    { requestId: 'bare', action: 'view', uri: `api/asset/equipment/${id}` },
    {
      requestId: 'absolute',
      action: 'view',
      uri: `http://other.example.invalid/api/asset/equipment/${id}?fields[asset--equipment]=name`,
    },
    { requestId: 'oauth', action: 'create', uri: '/oauth/token', body: 'grant_type=password' },
    { requestId: 'dots', action: 'view', uri: '/api/../oauth/token' },
    { requestId: 'encoded', action: 'view', uri: '/api/%2e%2e/system/files/x' },
    { requestId: 'other-host', action: 'view', uri: 'http://other.example.invalid/' },
    { requestId: 'scheme', action: 'view', uri: 'file:///etc/passwd' },
    { requestId: 'subrequests', action: 'create', uri: '/subrequests?_format=json', body: '[]' },
  ]);
  assert.equal(res.status, 200, res.text);
  for (const k of ['slash', 'bare', 'absolute']) {
    assert.equal(statusOf(res, k), 200, k);
    assert.equal(bodyOf(res, k).data.attributes.name, `Baler ${tag}`, k);
  }
  assert.deepEqual(Object.keys(bodyOf(res, 'absolute').data.attributes), ['name'], 'the query string is kept');
  for (const k of ['oauth', 'dots', 'encoded', 'other-host', 'scheme', 'subrequests']) {
    assert.equal(statusOf(res, k), 400, k);
    const error = bodyOf(res, k).errors[0];
    assert.equal(error.status, '400', k);
    assert.ok(error.source.pointer.endsWith('/uri'), k);
  }
  assert.match(bodyOf(res, 'oauth').errors[0].detail, /under \/api/);
});

test('an export (_format=csv, geojson, kml, or an Accept asking for one) inside a subrequest is refused before anything is sent', async () => {
  // An export is the whole filtered collection, unpaged: inside a call that holds every response
  // in memory it had no bound (trust issue, item 3). Exports are for GET /api/…?_format=csv.
  const name = `Never ${randomUUID().slice(0, 8)}`;
  const write = {
    requestId: 'write',
    action: 'create',
    uri: '/api/asset/equipment',
    body: JSON.stringify({ data: { type: 'asset--equipment', attributes: { name } } }),
  };
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['csv', { uri: '/api/log/activity?_format=csv' }, '/1/uri'],
    [
      'geojson, absolute uri',
      { uri: 'http://farm.example.invalid/api/asset/land?filter[status]=active&_format=geojson' },
      '/1/uri',
    ],
    ['kml, the name percent-encoded', { uri: '/api/asset/land?%5Fformat=kml' }, '/1/uri'],
    ['a list', { uri: '/api/log/activity?_format[]=csv' }, '/1/uri'],
    ['the last of two', { uri: '/api/log/activity?_format=json&_format=csv' }, '/1/uri'],
    ['a token', { uri: '/api/log/activity?_format={{write.body@$.data.type}}', waitFor: ['write'] }, '/1/uri'],
    ['Accept: text/csv', { uri: '/api/log/activity', headers: { Accept: 'text/csv' } }, '/1/headers/Accept'],
    ['accept: GeoJSON', { uri: '/api/asset/land', headers: { accept: 'application/geo+json' } }, '/1/headers/accept'],
  ];
  for (const [what, entry, pointer] of cases) {
    const res = await send([write, { requestId: 'export', action: 'view', ...entry }]);
    assert.equal(res.status, 400, `${what}: ${res.text.slice(0, 300)}`);
    const error = (res.body as any).errors[0];
    assert.equal(error.status, '400', what);
    assert.equal(error.source.pointer, pointer, what);
    assert.match(error.detail, /"export".*export/, what);
    assert.match(error.detail, pointer.endsWith('/uri') ? /_format/ : /Accept/i, what);
  }
  assert.deepEqual(
    (await get(`/api/asset/equipment?filter[name]=${encodeURIComponent(name)}`)).body.data,
    [],
    'no sub-request ran',
  );

  // JSON:API itself may be asked for by name.
  const json = await send([
    { requestId: 'json', action: 'view', uri: '/api/log/activity?_format=json&page[limit]=1' },
    { requestId: 'api_json', action: 'view', uri: '/api/log/activity?_format=api_json&page[limit]=1' },
  ]);
  assert.equal(json.status, 200, json.text);
  assert.equal(statusOf(json, 'json'), 200);
  assert.equal(statusOf(json, 'api_json'), 200);

  // A token cannot smuggle the parameter in either: checked again once the uri is expanded.
  const smuggled = await send([
    {
      requestId: 'named',
      action: 'create',
      uri: '/api/asset/equipment',
      body: JSON.stringify({ data: { type: 'asset--equipment', attributes: { name: '_format' } } }),
    },
    {
      requestId: 'export',
      action: 'view',
      uri: '/api/asset/equipment?{{named.body@$.data.attributes.name}}=csv',
      waitFor: ['named'],
    },
  ]);
  assert.equal(smuggled.status, 200, smuggled.text);
  assert.equal(statusOf(smuggled, 'export#uri{0}'), 400);
  const error = bodyOf(smuggled, 'export#uri{0}').errors[0];
  assert.equal(error.source.pointer, '/1/uri');
  assert.match(error.detail, /_format/);
});

test("the caller's token is used for every sub-request, and a blueprint may not set its own", async () => {
  const res = await send(
    [{ requestId: 'me', action: 'view', uri: '/api', headers: { Authorization: `Bearer ${adminToken}` } }],
    { token: viewerToken },
  );
  assert.equal(res.status, 400);
  assert.equal((res.body as any).errors[0].source.pointer, '/0/headers/Authorization');
  const me = await send([{ requestId: 'me', action: 'view', uri: '/api' }], { token: viewerToken });
  assert.equal(statusOf(me, 'me'), 200);
  const users = await get('/api/user/user?filter[name]=vic');
  assert.equal(bodyOf(me, 'me').meta.links.me.meta.id, users.body.data[0].id);
});

test('cycles, unknown ids and malformed blueprints fail the whole request before anything is sent', async () => {
  const name = `Never ${randomUUID().slice(0, 8)}`;
  const write = {
    requestId: 'write',
    action: 'create',
    uri: '/api/asset/equipment',
    body: JSON.stringify({ data: { type: 'asset--equipment', attributes: { name } } }),
  };

  const cycle = await send([
    write,
    { requestId: 'a', action: 'view', uri: '/api/asset/equipment', waitFor: ['b'] },
    { requestId: 'b', action: 'view', uri: '/api/asset/equipment', waitFor: ['c'] },
    { requestId: 'c', action: 'view', uri: '/api/asset/equipment', waitFor: ['a'] },
  ]);
  assert.equal(cycle.status, 400);
  assert.match(cycle.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
  const cycleError = (cycle.body as any).errors[0];
  assert.equal(cycleError.status, '400');
  assert.match(cycleError.detail, /cycle: "a" → "b" → "c" → "a"/);
  assert.equal(cycleError.source.pointer, '/1/waitFor');

  const tokenCycle = await send([
    { requestId: 'x', action: 'view', uri: '/api/asset/equipment/{{y.body@$.data.id}}' },
    { requestId: 'y', action: 'view', uri: '/api/asset/equipment/{{x.body@$.data.id}}' },
  ]);
  assert.equal(tokenCycle.status, 400);
  assert.match((tokenCycle.body as any).errors[0].detail, /"x" → "y" → "x"/);

  const cases: Array<[string, unknown, RegExp, string]> = [
    [
      'unknown waitFor',
      [write, { requestId: 'later', action: 'view', uri: '/api', waitFor: ['nope'] }],
      /"later" waits for "nope"/,
      '/1/waitFor/0',
    ],
    [
      'waiting for itself',
      [{ requestId: 'self', action: 'view', uri: '/api', waitFor: ['self'] }],
      /"self" waits for itself/,
      '/0/waitFor/0',
    ],
    [
      'unknown token id',
      [write, { requestId: 't', action: 'view', uri: '/api/asset/equipment/{{ghost.body@$.data.id}}' }],
      /"ghost" is not a requestId/,
      '/1/uri',
    ],
    [
      'unsupported JSONPath',
      [write, { requestId: 't', action: 'view', uri: '/api/asset/equipment/{{write.body@$..id}}', waitFor: ['write'] }],
      /recursive descent/,
      '/1/uri',
    ],
    ['not an array', { requestId: 'a', action: 'view', uri: '/api' }, /JSON array/, ''],
    ['empty', [], /empty/, ''],
    ['an entry that is not an object', ['view /api'], /must be an object/, '/0'],
    ['missing requestId', [{ action: 'view', uri: '/api' }], /needs a requestId/, '/0/requestId'],
    ['missing uri', [{ requestId: 'a', action: 'view' }], /needs a uri/, '/0/uri'],
    ['missing action', [{ requestId: 'a', uri: '/api' }], /needs an action/, '/0/action'],
    ['unknown action', [{ requestId: 'a', uri: '/api', action: 'patch' }], /unknown action "patch"/, '/0/action'],
    ['duplicate requestId', [write, { ...write }], /"write" is used by subrequests 0 and 1/, '/1/requestId'],
    ['body not a string', [{ ...write, body: 12 }], /body that is not a string/, '/0/body'],
    ['waitFor not a list of ids', [{ ...write, waitFor: [1] }], /waitFor that is not an array/, '/0/waitFor'],
    ['headers not an object', [{ ...write, headers: ['Accept'] }], /headers that are not an object/, '/0/headers'],
    ['requestId with #', [{ ...write, requestId: 'a#body{0}' }], /may not contain/, '/0/requestId'],
    [
      'too many',
      Array.from({ length: 51 }, (_, i) => ({ requestId: `r${i}`, action: 'view', uri: '/api' })),
      /at most 50/,
      '',
    ],
  ];
  for (const [what, blueprint, detail, pointer] of cases) {
    const res = await send(blueprint);
    assert.equal(res.status, 400, `${what}: ${res.text}`);
    const error = (res.body as any).errors[0];
    assert.equal(error.status, '400', what);
    assert.match(error.detail, detail, what);
    assert.equal(error.source.pointer, pointer, what);
  }
  assert.deepEqual(
    (await get(`/api/asset/equipment?filter[name]=${encodeURIComponent(name)}`)).body.data,
    [],
    'no sub-request ran',
  );
});

test('the call itself: a bearer token, _format=json and a JSON body are required', async () => {
  const blueprint = [{ requestId: 'a', action: 'view', uri: '/api' }];
  const anonymous = await request(`${server.url}/subrequests?_format=json`, { method: 'POST', json: blueprint });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.body.errors[0].status, '401');
  assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer/);

  const xml = await send(blueprint, { query: '?_format=xml' });
  assert.equal(xml.status, 400);
  assert.equal((xml.body as any).errors[0].source.parameter, '_format');
  const noFormat = await send(blueprint, { query: '' });
  assert.equal(noFormat.status, 200, 'a missing _format means json');

  const text = await send(JSON.stringify(blueprint), { contentType: 'text/plain' });
  assert.equal(text.status, 400);
  assert.match((text.body as any).errors[0].detail, /JSON array/);
  const broken = await send('[{"requestId": ', { contentType: 'application/json' });
  assert.equal(broken.status, 400);
  assert.equal((broken.body as any).errors[0].status, '400');
});

test('the work is bounded: copies past the limit fail that sub-request, an oversized call is a 413', async () => {
  // Eight different tokens with two values each (two users) would make 256 copies.
  const paths = [
    '$.data[*].id',
    '$.data[*].type',
    '$.data[*].attributes.name',
    '$.data[*].links.self.href',
    "$.data[*]['id']",
    "$.data[*]['type']",
    "$.data[*].attributes['name']",
    "$.data[*].links['self'].href",
  ];
  const res = await send([
    { requestId: 'users', action: 'view', uri: '/api/user/user' },
    {
      requestId: 'many',
      action: 'view',
      uri: `/api/user/user?${paths.map((p, i) => `x${i}={{users.body@${p}}}`).join('&')}`,
      waitFor: ['users'],
    },
    { requestId: 'after', action: 'view', uri: '/api/user/user?page[limit]=1' },
  ]);
  assert.equal(res.status, 200, res.text);
  assert.equal(bodyOf(res, 'users').data.length, 2);
  assert.deepEqual(Object.keys(res.body), ['users', 'many', 'after']);
  assert.equal(statusOf(res, 'many'), 413);
  assert.match(bodyOf(res, 'many').errors[0].detail, /256 copies/);
  assert.equal(statusOf(res, 'after'), 200);

  const huge = [{ requestId: 'big', action: 'create', uri: '/api/asset/equipment', body: 'x'.repeat(5 * 1024 * 1024) }];
  const tooLarge = await send(huge);
  assert.equal(tooLarge.status, 413);
  assert.equal((tooLarge.body as any).errors[0].status, '413');
});

test('the JSONPath subset: $, .name, [n], [*], quoted names', () => {
  const doc = {
    data: [
      { id: 'a', attributes: { drupal_internal__id: 1 } },
      { id: 'b', attributes: { drupal_internal__id: 2 } },
    ],
    links: { self: { href: 'x' } },
  };
  const at = (path: string) => evaluateJsonPath(parseJsonPath(path), doc);
  assert.deepEqual(at('$.data[*].id'), ['a', 'b']);
  assert.deepEqual(at('$.data[1].id'), ['b']);
  assert.deepEqual(at('$.data[-1].id'), ['b']);
  assert.deepEqual(at('$.data.0.id'), ['a']);
  assert.deepEqual(at('$.data.id'), []);
  assert.deepEqual(at("$['links']['self'].href"), ['x']);
  assert.deepEqual(at('$.data[*].attributes.drupal_internal__id'), [1, 2]);
  assert.deepEqual(at('$.links.*.href'), ['x']);
  assert.deepEqual(at('$'), [doc]);
  for (const bad of ['data.id', '$..id', '$.data[?(@.id)]', '$.data[0:1]', '$.', '$.data[']) {
    assert.throws(() => parseJsonPath(bad), JsonPathSyntaxError, bad);
  }
});
