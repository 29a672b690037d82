// Optimistic concurrency for offline clients (issue 25 item 5): every answer about one resource
// carries an ETag made from its version (its place in the change feed); PATCH and DELETE with
// If-Match are refused with 412 when the record changed in between, and two PATCHes sent with the
// same ETag give exactly one 200 and one 412; without If-Match the last write wins as before; a
// GET with If-None-Match naming the current version is a 304.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
});
after(() => server.close());

const rename = (id: string, name: string, ifMatch?: string) =>
  api.patch(`/api/log/activity/${id}`, { data: { type: 'log--activity', id, attributes: { name } } }, ifMatch ? { 'If-Match': ifMatch } : undefined);

async function newLog(name: string): Promise<{ id: string; etag: string }> {
  const res = await api.post('/api/log/activity', { data: { type: 'log--activity', attributes: { name, status: 'done', timestamp: '2024-05-01T08:00:00Z' } } });
  assert.equal(res.status, 201, res.text);
  const etag = res.headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/, 'a created record comes with its ETag');
  return { id: res.body.data.id, etag: etag! };
}

test("GET, POST and PATCH carry the record's ETag, its version in the change feed; If-None-Match gives 304 until it changes", async () => {
  const log = await newLog('Tagged');
  const got = await api.get(`/api/log/activity/${log.id}`);
  assert.equal(got.headers.get('etag'), log.etag, 'the same version until it changes');
  const feed = (await api.get('/api/changes?since=0&page[limit]=500&filter[type]=log--activity')).body.data.find((e: any) => e.id === log.id);
  if (feed) assert.equal(`"${feed.meta.version}"`, log.etag, "the ETag is the feed's version");

  const unchanged = await api.get(`/api/log/activity/${log.id}`, { 'If-None-Match': log.etag });
  assert.equal(unchanged.status, 304);
  assert.equal(unchanged.text, '');
  assert.equal(unchanged.headers.get('etag'), log.etag);

  const patched = await rename(log.id, 'Tagged again');
  assert.equal(patched.status, 200);
  const etag = patched.headers.get('etag')!;
  assert.notEqual(etag, log.etag, 'a save gives a new version');
  const changed = await api.get(`/api/log/activity/${log.id}`, { 'If-None-Match': log.etag });
  assert.equal(changed.status, 200, 'a stale If-None-Match gets the record');
  assert.equal(changed.headers.get('etag'), etag);
  assert.equal(changed.body.data.attributes.name, 'Tagged again');
  // A representation with included records has a tag of its own, and no 304.
  const included = await api.get(`/api/log/activity/${log.id}?include=owner`, { 'If-None-Match': etag });
  assert.equal(included.status, 200);
  assert.match(included.headers.get('etag') ?? '', /^"\d+-[\w-]+"$/);
});

test('two PATCHes sent with the same ETag: exactly one 200 and one 412, and the winner is what is stored', async () => {
  for (let round = 0; round < 8; round++) {
    const log = await newLog(`Race ${round}`);
    const [a, b] = await Promise.all([rename(log.id, `A${round}`, log.etag), rename(log.id, `B${round}`, log.etag)]);
    const statuses = [a.status, b.status].sort();
    assert.deepEqual(statuses, [200, 412], `round ${round}: ${a.text.slice(0, 200)} / ${b.text.slice(0, 200)}`);
    const [winner, loser] = a.status === 200 ? [a, b] : [b, a];
    assert.equal(loser.body.errors[0].code, 'precondition_failed');
    assert.equal(loser.headers.get('etag'), winner.headers.get('etag'), 'the 412 names the version to fetch');
    const stored = await api.get(`/api/log/activity/${log.id}`);
    assert.equal(stored.body.data.attributes.name, winner.body.data.attributes.name);
  }
});

test('DELETE with a stale If-Match is refused and deletes nothing; with the current one it deletes', async () => {
  const log = await newLog('Keep me');
  const current = (await rename(log.id, 'Kept')).headers.get('etag')!;
  const stale = await api.raw('DELETE', `/api/log/activity/${log.id}`, undefined, { 'If-Match': log.etag });
  assert.equal(stale.status, 412);
  assert.equal((await api.get(`/api/log/activity/${log.id}`)).status, 200, 'still there');
  assert.equal((await api.raw('DELETE', `/api/log/activity/${log.id}`, undefined, { 'If-Match': current })).status, 204);
  assert.equal((await api.get(`/api/log/activity/${log.id}`)).status, 404);
  // An unknown record is the 404 it always was, If-Match or not.
  assert.equal((await rename(log.id, 'Ghost', current)).status, 404);
});

test('without If-Match the last write wins, as farmOS.js, farmOS.py and Field Kit expect; If-Match: * matches any version', async () => {
  const log = await newLog('Plain');
  assert.equal((await rename(log.id, 'First')).status, 200);
  assert.equal((await rename(log.id, 'Second')).status, 200);
  assert.equal((await api.get(`/api/log/activity/${log.id}`)).body.data.attributes.name, 'Second');
  assert.equal((await rename(log.id, 'Third', '*')).status, 200);
  assert.equal((await rename(log.id, 'Weak', `W/${log.etag}`)).status, 412, 'a weak tag never matches If-Match');
});

test('PATCHes sent at once each give the record a new version (on SQLite they share one COMMIT)', async () => {
  const log = await newLog('Busy');
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => rename(log.id, `Busy ${i}`)));
  assert.deepEqual(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200]);
  const tags = answers.map((a) => a.headers.get('etag'));
  assert.equal(new Set(tags).size, tags.length, `every save its own ETag: ${tags.join(' ')}`);
  // The last save's version is the record's now, and the feed's.
  const current = (await api.get(`/api/log/activity/${log.id}`)).headers.get('etag');
  assert.equal(current, tags.map((t) => Number(t!.replace(/"/g, ''))).sort((a, b) => b - a).map((v) => `"${v}"`)[0]);
});

test('PATCHes with and without If-Match racing on one record: each a 200 or a 412, never a 5xx', async () => {
  for (let round = 0; round < 4; round++) {
    const log = await newLog(`Mixed ${round}`);
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => rename(log.id, `Mixed ${round}.${i}`, i % 2 ? log.etag : undefined)));
    for (const a of answers) assert.ok(a.status === 200 || a.status === 412, `${a.status}: ${a.text.slice(0, 200)}`);
    assert.ok(answers.filter((_, i) => i % 2 === 0).every((a) => a.status === 200), 'without If-Match every save goes through');
  }
});
