// farmOS differences that break scripts or lose data (issue 41 Part B.2–B.4): a required field
// sent as null is a 422 naming it, as farmOS answers, not a silent reset (an archived asset made
// active again) or a stored null; and a client-sent `changed` is kept as farmOS keeps it
// (ChangedItem::preSave: on a new record, and on an update when it differs from the stored one),
// so an offline client's time of change survives its sync.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, ADMIN, type TestServer } from '../support/server.ts';
import { passwordToken } from '../support/http.ts';
import { Api } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;

before(async () => {
  server = await startTestServer();
  api = new Api(server.url, await passwordToken(server.url, ADMIN.name, ADMIN.password));
});
after(() => server.close());

test('status: null on an asset is a 422 naming status; the archived asset stays archived', async () => {
  const asset = await api.create('asset--equipment', { name: 'Old tractor', status: 'archived' });
  const res = await api.patch(`/api/asset/equipment/${asset.id}`, {
    data: { type: 'asset--equipment', id: asset.id, attributes: { status: null } },
  });
  assert.equal(res.status, 422, res.text.slice(0, 400));
  assert.equal(res.body.errors[0].source.pointer, '/data/attributes/status');
  const created = await api.post('/api/asset/equipment', {
    data: { type: 'asset--equipment', attributes: { name: 'New tractor', status: null } },
  });
  assert.equal(created.status, 422, created.text.slice(0, 400));
  assert.equal((await api.get(`/api/asset/equipment/${asset.id}`)).body.data.attributes.status, 'archived');
});

test('timestamp: null on a log is a 422 naming timestamp (required since farmOS 3.0); nothing is stored', async () => {
  const log = await api.create('log--activity', {
    name: 'Mowing',
    timestamp: '2026-05-01T08:00:00+00:00',
    status: 'done',
  });
  const res = await api.patch(`/api/log/activity/${log.id}`, {
    data: { type: 'log--activity', id: log.id, attributes: { timestamp: null } },
  });
  assert.equal(res.status, 422, res.text.slice(0, 400));
  assert.equal(res.body.errors[0].source.pointer, '/data/attributes/timestamp');
  const created = await api.post('/api/log/activity', {
    data: { type: 'log--activity', attributes: { name: 'No time', timestamp: null } },
  });
  assert.equal(created.status, 422, created.text.slice(0, 400));
  assert.equal(
    (await api.get(`/api/log/activity/${log.id}`)).body.data.attributes.timestamp,
    '2026-05-01T08:00:00+00:00',
  );
});

test('a client-sent changed is kept, on a new record and on an update that changes it; an update that echoes it gets the time of the save', async () => {
  const made = await api.post('/api/log/observation', {
    data: {
      type: 'log--observation',
      attributes: {
        name: 'Made offline',
        status: 'done',
        timestamp: '2026-05-01T08:00:00+00:00',
        changed: '2026-05-01T08:05:00+00:00',
      },
    },
  });
  assert.equal(made.status, 201, made.text.slice(0, 400));
  assert.equal(made.body.data.attributes.changed, '2026-05-01T08:05:00+00:00');
  const id = made.body.data.id;
  const edited = await api.patch(`/api/log/observation/${id}`, {
    data: {
      type: 'log--observation',
      id,
      attributes: { name: 'Edited offline', changed: '2026-05-02T09:00:00+00:00' },
    },
  });
  assert.equal(edited.status, 200, edited.text.slice(0, 400));
  assert.equal(edited.body.data.attributes.changed, '2026-05-02T09:00:00+00:00');
  // The same changed sent back with an edit (a client echoing the whole record): the server's time.
  const echoed = await api.patch(`/api/log/observation/${id}`, {
    data: { type: 'log--observation', id, attributes: { name: 'Edited online', changed: '2026-05-02T09:00:00+00:00' } },
  });
  assert.equal(echoed.status, 200);
  assert.ok(Date.parse(echoed.body.data.attributes.changed) > Date.now() - 60_000, echoed.body.data.attributes.changed);
  // Versions still follow the server's own order: the feed lists the log after the edit.
  const feed = await api.get('/api/changes?since=0&filter[type]=log--observation&page[limit]=500');
  assert.ok(feed.body.data.some((e: { id: string }) => e.id === id));
});
