// Who wrote a record and when, writable as in farmOS (issue 24 item 1): `created` and the `uid`
// relationship of assets, logs and quantities are kept when a caller who may edit the record sends
// them; `changed` stays the server's; the record's own numbers are a 403 naming the field, with
// Drupal's words (core EntityAccessControlHandler::fieldAccess, JSON:API EntityResource).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request, passwordToken } from '../support/http.ts';
import { createUser } from '../../runtime/accounts/users.ts';

let server: TestServer;
let token: string;
let viewer: string;
let ann: { type: string; id: string };

const CREATED = '2019-01-01T00:00:00+00:00';

before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
  const account = await createUser(server.ctx.db.knex, {
    name: 'ann',
    password: 'ann-password-1',
    roles: ['farm_worker'],
  });
  ann = { type: 'user--user', id: account.uuid };
  await createUser(server.ctx.db.knex, { name: 'vic', password: 'vic-password-1', roles: ['farm_viewer'] });
  viewer = await passwordToken(server.url, 'vic', 'vic-password-1');
});
after(() => server.close());

const api = (path: string, init: Parameters<typeof request>[1] = {}) =>
  request(`${server.url}${path}`, { token, ...init });

test("created and uid sent on POST are kept, for assets, logs and quantities; the revision is still the caller's", async () => {
  for (const [path, type, attributes] of [
    ['/api/asset/equipment', 'asset--equipment', { name: 'Old tractor' }],
    ['/api/log/activity', 'log--activity', { name: 'Ploughed', timestamp: CREATED }],
    ['/api/quantity/standard', 'quantity--standard', { measure: 'count', value: { decimal: '3' } }],
  ] as const) {
    const res = await api(path, {
      method: 'POST',
      json: { data: { type, attributes: { ...attributes, created: CREATED }, relationships: { uid: { data: ann } } } },
    });
    assert.equal(res.status, 201, res.text.slice(0, 400));
    const stored = (await api(`${path}/${res.body.data.id}`)).body.data;
    assert.equal(stored.attributes.created, CREATED, `${type} created`);
    assert.equal(stored.relationships.uid.data.id, ann.id, `${type} uid`);
    assert.notEqual(stored.attributes.changed, CREATED, `${type} changed is the server's`);
    assert.notEqual(stored.relationships.revision_user.data.id, ann.id, `${type}: the revision is the caller's`);
  }
});

test('PATCH changes created and uid; a changed sent is kept (farmOS ChangedItem::preSave); a null uid on POST means the caller', async () => {
  const made = await api('/api/asset/equipment', {
    method: 'POST',
    json: { data: { type: 'asset--equipment', attributes: { name: 'Baler' }, relationships: { uid: { data: null } } } },
  });
  assert.equal(made.status, 201, made.text);
  const me = made.body.data.relationships.uid.data;
  assert.ok(me, 'uid {data: null} on POST: the author is the caller, as before');
  const path = `/api/asset/equipment/${made.body.data.id}`;
  const res = await api(path, {
    method: 'PATCH',
    json: {
      data: {
        type: 'asset--equipment',
        id: made.body.data.id,
        attributes: { created: '2020-02-02T02:02:02+00:00', changed: CREATED },
        relationships: { uid: { data: ann } },
      },
    },
  });
  assert.equal(res.status, 200, res.text.slice(0, 400));
  const stored = (await api(path)).body.data;
  assert.equal(stored.attributes.created, '2020-02-02T02:02:02+00:00');
  assert.equal(stored.relationships.uid.data.id, ann.id);
  assert.equal(
    stored.attributes.changed,
    CREATED,
    'a changed sent other than the stored one is kept, as farmOS keeps it (issue 41 B.4)',
  );
});

test('bad values are refused naming the field, and nothing changes; a viewer may not write them', async () => {
  const made = await api('/api/log/activity', {
    method: 'POST',
    json: { data: { type: 'log--activity', attributes: { name: 'Weeded', created: CREATED } } },
  });
  const path = `/api/log/activity/${made.body.data.id}`;
  const before = (await api(path)).body.data;
  const badDate = await api(path, {
    method: 'PATCH',
    json: { data: { type: 'log--activity', id: before.id, attributes: { created: 'yesterday' } } },
  });
  assert.equal(badDate.status, 422, badDate.text);
  assert.equal(badDate.body.errors[0].source.pointer, '/data/attributes/created');
  const ghost = await api(path, {
    method: 'PATCH',
    json: {
      data: {
        type: 'log--activity',
        id: before.id,
        relationships: { uid: { data: { type: 'user--user', id: '00000000-0000-4000-8000-000000000000' } } },
      },
    },
  });
  assert.equal(ghost.status, 404, ghost.text);
  assert.equal(ghost.body.errors[0].source.pointer, '/data/relationships/uid/data');
  const wrongType = await api(path, {
    method: 'PATCH',
    json: {
      data: {
        type: 'log--activity',
        id: before.id,
        relationships: { uid: { data: { type: 'asset--equipment', id: before.id } } },
      },
    },
  });
  assert.equal(wrongType.status, 422, wrongType.text);
  const byViewer = await request(`${server.url}${path}`, {
    method: 'PATCH',
    token: viewer,
    json: { data: { type: 'log--activity', id: before.id, attributes: { created: '2001-01-01T00:00:00+00:00' } } },
  });
  assert.equal(byViewer.status, 403, byViewer.text);
  const after = (await api(path)).body.data;
  assert.equal(after.attributes.created, CREATED);
  assert.deepEqual(after.relationships.uid.data, before.relationships.uid.data);
  assert.equal(
    after.attributes.drupal_internal__revision_id,
    before.attributes.drupal_internal__revision_id,
    'no revision written',
  );
});

test("a file's created and uid, and a data stream's created, are written as an asset's: kept, refused naming the field when bad, not by a viewer", async () => {
  const upload = await request(`${server.url}/api/log/activity/file`, {
    method: 'POST',
    token,
    body: new Uint8Array(Buffer.from('field notes')),
    headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'file; filename="notes.txt"' },
  });
  assert.equal(upload.status, 201, upload.text.slice(0, 400));
  const file = upload.body.data;
  const filePath = `/api/file/file/${file.id}`;
  const patched = await api(filePath, {
    method: 'PATCH',
    json: {
      data: {
        type: 'file--file',
        id: file.id,
        attributes: { created: CREATED, changed: CREATED },
        relationships: { uid: { data: ann } },
      },
    },
  });
  assert.equal(patched.status, 200, patched.text.slice(0, 400));
  let stored = (await api(filePath)).body.data;
  assert.equal(stored.attributes.created, CREATED);
  assert.equal(stored.relationships.uid.data.id, ann.id);
  assert.equal(stored.attributes.changed, CREATED, 'a changed sent is kept, as farmOS keeps it (issue 41 B.4)');
  const bad = await api(filePath, {
    method: 'PATCH',
    json: { data: { type: 'file--file', id: file.id, attributes: { created: 'long ago' } } },
  });
  assert.equal(bad.status, 422, bad.text);
  assert.equal(bad.body.errors[0].source.pointer, '/data/attributes/created');
  const byViewer = await request(`${server.url}${filePath}`, {
    method: 'PATCH',
    token: viewer,
    json: { data: { type: 'file--file', id: file.id, relationships: { uid: { data: null } } } },
  });
  assert.equal(byViewer.status, 403, byViewer.text);
  stored = (await api(filePath)).body.data;
  assert.deepEqual([stored.attributes.created, stored.relationships.uid.data.id], [CREATED, ann.id], 'nothing changed');

  const stream = await api('/api/data_stream/basic', {
    method: 'POST',
    json: { data: { type: 'data_stream--basic', attributes: { name: 'Soil moisture', created: CREATED } } },
  });
  assert.equal(stream.status, 201, stream.text.slice(0, 400));
  assert.equal((await api(`/api/data_stream/basic/${stream.body.data.id}`)).body.data.attributes.created, CREATED);
  const moved = await api(`/api/data_stream/basic/${stream.body.data.id}`, {
    method: 'PATCH',
    json: {
      data: {
        type: 'data_stream--basic',
        id: stream.body.data.id,
        attributes: { created: '2020-02-02T02:02:02+00:00' },
      },
    },
  });
  assert.equal(moved.status, 200, moved.text.slice(0, 400));
  assert.equal(moved.body.data.attributes.created, '2020-02-02T02:02:02+00:00');
});

test('drupal_internal__id and drupal_internal__revision_id: 403 naming the field, as Drupal answers; an echo of the stored value on PATCH is ignored', async () => {
  const posted = await api('/api/asset/equipment', {
    method: 'POST',
    json: { data: { type: 'asset--equipment', attributes: { name: 'Numbered', drupal_internal__id: 4242 } } },
  });
  assert.equal(posted.status, 403, posted.text);
  assert.equal(
    posted.body.errors[0].detail,
    'The current user is not allowed to POST the selected field (drupal_internal__id). The entity ID cannot be changed.',
  );
  assert.equal(posted.body.errors[0].source.pointer, '/data/attributes/drupal_internal__id');
  const list = await api('/api/asset/equipment?filter[name]=Numbered');
  assert.equal(list.body.data.length, 0, 'nothing created');

  const made = (
    await api('/api/asset/equipment', {
      method: 'POST',
      json: { data: { type: 'asset--equipment', attributes: { name: 'Counted' } } },
    })
  ).body.data;
  const path = `/api/asset/equipment/${made.id}`;
  const { drupal_internal__id: id, drupal_internal__revision_id: rev } = made.attributes;
  const echo = await api(path, {
    method: 'PATCH',
    json: {
      data: {
        type: 'asset--equipment',
        id: made.id,
        attributes: { name: 'Counted 2', drupal_internal__id: id, drupal_internal__revision_id: rev },
      },
    },
  });
  assert.equal(echo.status, 200, echo.text);
  for (const [name, value, what] of [
    ['drupal_internal__id', id + 1000, 'entity ID'],
    ['drupal_internal__revision_id', rev + 1000, 'revision ID'],
  ] as const) {
    const res = await api(path, {
      method: 'PATCH',
      json: { data: { type: 'asset--equipment', id: made.id, attributes: { name: 'Renumbered', [name]: value } } },
    });
    assert.equal(res.status, 403, res.text);
    assert.equal(
      res.body.errors[0].detail,
      `The current user is not allowed to PATCH the selected field (${name}). The ${what} cannot be changed.`,
    );
    assert.equal(res.body.errors[0].source.pointer, `/data/attributes/${name}`);
  }
  const after = (await api(path)).body.data;
  assert.equal(after.attributes.name, 'Counted 2');
  assert.equal(after.attributes.drupal_internal__id, id);
});
