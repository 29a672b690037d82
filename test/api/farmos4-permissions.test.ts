// farmOS 4.0's worker (PR #1033, "Limit permissions of worker role"), in the farmOS 4.x shape
// only: a worker deletes only the records they authored (`uid`), and creates terms but edits or
// deletes none. Through the farmOS 2.x shape (/api on the main base) the same worker, with the same
// token, keeps farmOS 2.x's rights: deleting anyone's logs, assets and quantities, and creating,
// editing and deleting terms. Each action is tried through both
// shapes, straight, inside a subrequest, and through relationship endpoints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { startFarmos4Server } from '../support/farmos4.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let base4: string;
let admin: string;
let wendy: string; // a worker
let walt: string; // another worker
let manny: string; // a manager
let wendyUuid: string;
let waltUuid: string;

before(async () => {
  ({ server, hostname: base4 } = await startFarmos4Server());
  admin = await passwordToken(server.url, ADMIN.name, ADMIN.password);
  const knex = server.ctx.db.knex;
  wendyUuid = (await createUser(knex, { name: 'wendy', password: 'wendy-password-1', roles: ['farm_worker'] })).uuid;
  waltUuid = (await createUser(knex, { name: 'walt', password: 'walt-password-1', roles: ['farm_worker'] })).uuid;
  await createUser(knex, { name: 'manny', password: 'manny-password-1', roles: ['farm_manager'] });
  // One sign-in each, used through both shapes: the shapes share tokens.
  wendy = await passwordToken(server.url, 'wendy', 'wendy-password-1');
  walt = await passwordToken(server.url, 'walt', 'walt-password-1');
  manny = await passwordToken(server.url, 'manny', 'manny-password-1');
});
after(() => server?.close());

type Shape = '2.x' | '4.x';
const baseOf = (shape: Shape) => (shape === '2.x' ? server.url : base4);

function api(shape: Shape, token: string, path: string, init: Parameters<typeof request>[1] = {}) {
  return request(`${baseOf(shape)}${path}`, { token, ...init });
}

/** A record made by `token`'s user through the 2.x shape (either shape's POST makes the same record). */
async function made(
  token: string,
  path: string,
  type: string,
  attributes: Record<string, unknown>,
  relationships = {},
) {
  const res = await api('2.x', token, path, { method: 'POST', json: { data: { type, attributes, relationships } } });
  assert.equal(res.status, 201, res.text);
  return res.body.data as { id: string; type: string };
}

const equipment = (token: string, name: string) => made(token, '/api/asset/equipment', 'asset--equipment', { name });
const activity = (token: string, name: string) =>
  made(token, '/api/log/activity', 'log--activity', { name, timestamp: '2026-05-01T08:00:00+00:00', status: 'done' });

async function exists(path: string): Promise<boolean> {
  return (await api('2.x', admin, path)).status === 200;
}

test("a worker deletes another's asset, log and quantity through the 2.x shape (today's rights)", async () => {
  const asset = await equipment(walt, 'Walt’s harrow');
  const log = await activity(walt, 'Walt’s mowing');
  const quantity = await made(walt, '/api/quantity/standard', 'quantity--standard', { value: { decimal: '2' } });
  for (const [path] of [
    [`/api/asset/equipment/${asset.id}`],
    [`/api/log/activity/${log.id}`],
    [`/api/quantity/standard/${quantity.id}`],
  ]) {
    const res = await api('2.x', wendy, path!, { method: 'DELETE' });
    assert.equal(res.status, 204, `${path}: ${res.text}`);
    assert.equal(await exists(path!), false);
  }
});

test("through the 4.x shape a worker may not delete another's asset, log or quantity: 403, and it is still there", async () => {
  const asset = await equipment(walt, 'Walt’s seeder');
  const log = await activity(walt, 'Walt’s weeding');
  const quantity = await made(walt, '/api/quantity/standard', 'quantity--standard', { value: { decimal: '3' } });
  for (const path of [
    `/api/asset/equipment/${asset.id}`,
    `/api/log/activity/${log.id}`,
    `/api/quantity/standard/${quantity.id}`,
  ]) {
    const res = await api('4.x', wendy, path, { method: 'DELETE' });
    assert.equal(res.status, 403, `${path}: ${res.text}`);
    assert.equal(res.body.errors[0].status, '403');
    assert.equal(await exists(path), true, `${path} kept`);
  }
});

test('through the 4.x shape a worker deletes what they authored, and still changes and creates anything', async () => {
  const own = await equipment(wendy, 'Wendy’s cart');
  const ownLog = await activity(wendy, 'Wendy’s planting');
  for (const path of [`/api/asset/equipment/${own.id}`, `/api/log/activity/${ownLog.id}`]) {
    const res = await api('4.x', wendy, path, { method: 'DELETE' });
    assert.equal(res.status, 204, `${path}: ${res.text}`);
    assert.equal(await exists(path), false);
  }
  // Update any: the worker's right to change others' records is unchanged in farmOS 4.0.
  const others = await activity(walt, 'Walt’s pruning');
  const patch = await api('4.x', wendy, `/api/log/activity/${others.id}`, {
    method: 'PATCH',
    json: { data: { type: 'log--activity', id: others.id, attributes: { name: 'Pruned by Wendy' } } },
  });
  assert.equal(patch.status, 200, patch.text);
  assert.equal(patch.body.data.attributes.name, 'Pruned by Wendy');
  const post = await api('4.x', wendy, '/api/asset/equipment', {
    method: 'POST',
    json: { data: { type: 'asset--equipment', attributes: { name: 'Made in 4.x' } } },
  });
  assert.equal(post.status, 201, post.text);
});

test('the same worker in the same request shape but as a manager: a manager deletes anyone’s record through 4.x', async () => {
  const asset = await equipment(walt, 'Walt’s plough');
  const res = await api('4.x', manny, `/api/asset/equipment/${asset.id}`, { method: 'DELETE' });
  assert.equal(res.status, 204, res.text);
});

test('through the 4.x shape a worker may not take a record over by changing its uid, so as to delete it', async () => {
  const log = await activity(walt, 'Walt’s spraying');
  const me = { type: 'user--user', id: wendyUuid };
  const patch = await api('4.x', wendy, `/api/log/activity/${log.id}`, {
    method: 'PATCH',
    json: { data: { type: 'log--activity', id: log.id, relationships: { uid: { data: me } } } },
  });
  assert.equal(patch.status, 403, patch.text);
  assert.equal(patch.body.errors[0].source?.pointer, '/data/relationships/uid');
  // The relationship endpoint is the same write.
  const rel = await api('4.x', wendy, `/api/log/activity/${log.id}/relationships/uid`, {
    method: 'PATCH',
    json: { data: me },
  });
  assert.equal(rel.status, 403, rel.text);
  const still = await api('2.x', admin, `/api/log/activity/${log.id}`);
  assert.equal(still.body.data.relationships.uid.data.id, waltUuid);
  // Sending the author it already has is no change, and a manager may reassign it.
  const same = await api('4.x', wendy, `/api/log/activity/${log.id}`, {
    method: 'PATCH',
    json: {
      data: {
        type: 'log--activity',
        id: log.id,
        relationships: { uid: { data: { type: 'user--user', id: waltUuid } } },
      },
    },
  });
  assert.equal(same.status, 200, same.text);
  const byManager = await api('4.x', manny, `/api/log/activity/${log.id}/relationships/uid`, {
    method: 'PATCH',
    json: { data: me },
  });
  assert.ok(byManager.status === 200 || byManager.status === 204, byManager.text);
  // Through 2.x the worker may set it as before (farmOS lets an editor set `uid`).
  const back = await api('2.x', wendy, `/api/log/activity/${log.id}/relationships/uid`, {
    method: 'PATCH',
    json: { data: { type: 'user--user', id: waltUuid } },
  });
  assert.ok(back.status === 200 || back.status === 204, back.text);
});

test('relationship endpoints through 4.x: a worker changes the relationships of another’s log, not of a term', async () => {
  const log = await activity(walt, 'Walt’s moving');
  const asset = await equipment(walt, 'Walt’s trailer');
  const add = await api('4.x', wendy, `/api/log/activity/${log.id}/relationships/asset`, {
    method: 'POST',
    json: { data: [{ type: 'asset--equipment', id: asset.id }] },
  });
  assert.ok(add.status === 200 || add.status === 204, add.text);
  const removed = await api('4.x', wendy, `/api/log/activity/${log.id}/relationships/asset`, {
    method: 'DELETE',
    json: { data: [{ type: 'asset--equipment', id: asset.id }] },
  });
  assert.ok(removed.status === 200 || removed.status === 204, removed.text);
  const term = await made(admin, '/api/taxonomy_term/plant_type', 'taxonomy_term--plant_type', { name: 'Kale' });
  const parent = await made(admin, '/api/taxonomy_term/plant_type', 'taxonomy_term--plant_type', { name: 'Brassicas' });
  const reparent = (shape: '2.x' | '4.x') =>
    api(shape, wendy, `/api/taxonomy_term/plant_type/${term.id}/relationships/parent`, {
      method: 'PATCH',
      json: { data: [{ type: 'taxonomy_term--plant_type', id: parent.id }] },
    });
  const refused = await reparent('4.x');
  assert.equal(refused.status, 403, `4.x: ${refused.text}`);
  const allowed = await reparent('2.x');
  assert.ok(allowed.status === 200 || allowed.status === 204, `2.x: ${allowed.text}`);
});

test('terms: through 4.x a worker creates them but neither edits nor deletes one; through 2.x does all three; a manager does all through 4.x', async () => {
  const term = await made(admin, '/api/taxonomy_term/plant_type', 'taxonomy_term--plant_type', { name: 'Leek' });
  const path = `/api/taxonomy_term/plant_type/${term.id}`;
  const rename = (shape: '2.x' | '4.x', name: string) =>
    api(shape, wendy, path, {
      method: 'PATCH',
      json: { data: { type: 'taxonomy_term--plant_type', id: term.id, attributes: { name } } },
    });
  assert.equal((await rename('4.x', 'Leeks')).status, 403, '4.x PATCH');
  assert.equal((await api('4.x', wendy, path, { method: 'DELETE' })).status, 403, '4.x DELETE');
  // Creating one, as from an autocomplete field, stays a worker's right in 4.x (PR #1033).
  const created = await api('4.x', wendy, '/api/taxonomy_term/plant_type', {
    method: 'POST',
    json: { data: { type: 'taxonomy_term--plant_type', attributes: { name: 'Chard' } } },
  });
  assert.equal(created.status, 201, created.text);
  // farmOS 2.x's worker edits and deletes terms ("edit/delete terms in <vocabulary>").
  assert.equal((await rename('2.x', 'Leeks')).status, 200, '2.x PATCH');
  const own = JSON.parse(created.text).data.id;
  assert.equal((await api('2.x', wendy, `/api/taxonomy_term/plant_type/${own}`, { method: 'DELETE' })).status, 204);
  const patch = await api('4.x', manny, path, {
    method: 'PATCH',
    json: { data: { type: 'taxonomy_term--plant_type', id: term.id, attributes: { name: 'Leeks' } } },
  });
  assert.equal(patch.status, 200, patch.text);
  assert.equal((await api('4.x', manny, path, { method: 'DELETE' })).status, 204);
});

test('a data stream has no author: through 4.x a worker may not delete one, through 2.x they may', async () => {
  const stream = () => made(admin, '/api/data_stream/basic', 'data_stream--basic', { name: 'Soil moisture' });
  const first = await stream();
  const refused = await api('4.x', wendy, `/api/data_stream/basic/${first.id}`, { method: 'DELETE' });
  assert.equal(refused.status, 403, refused.text);
  const allowed = await api('2.x', wendy, `/api/data_stream/basic/${first.id}`, { method: 'DELETE' });
  assert.equal(allowed.status, 204, allowed.text);
});

/** POST /subrequests?_format=json through a shape, with a worker's token. */
async function subrequests(shape: Shape, token: string, blueprint: unknown[]) {
  const res = await request(`${baseOf(shape)}/subrequests?_format=json`, {
    method: 'POST',
    token,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(blueprint),
  });
  assert.equal(res.status, 200, res.text);
  return res.body as Record<string, { headers: { status: string[] }; body: string }>;
}

test('subrequests follow the shape they are sent through: 4.x refuses deleting another’s log, 2.x does not', async () => {
  const theirs = await activity(walt, 'Walt’s harvest');
  const own = await activity(wendy, 'Wendy’s harvest');
  const blueprint = (id: string, requestId: string) => ({
    requestId,
    action: 'delete',
    uri: `/api/log/activity/${id}`,
    headers: { Accept: 'application/vnd.api+json' },
  });
  const in4 = await subrequests('4.x', wendy, [blueprint(theirs.id, 'theirs'), blueprint(own.id, 'own')]);
  assert.equal(Number(in4.theirs!.headers.status[0]), 403, in4.theirs!.body);
  assert.equal(Number(in4.own!.headers.status[0]), 204);
  assert.equal(await exists(`/api/log/activity/${theirs.id}`), true);
  assert.equal(await exists(`/api/log/activity/${own.id}`), false);
  const in2 = await subrequests('2.x', wendy, [blueprint(theirs.id, 'theirs')]);
  assert.equal(Number(in2.theirs!.headers.status[0]), 204, in2.theirs!.body);
});
