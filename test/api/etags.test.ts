// Optimistic concurrency for offline clients (issue 25 item 5): every answer about one resource
// carries an ETag made from its version (its place in the change feed); PATCH and DELETE with
// If-Match are refused with 412 when the record changed in between, and two PATCHes sent with the
// same ETag give exactly one 200 and one 412; without If-Match the last write wins as before; a
// GET with If-None-Match naming the current version is a 304.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api, ref } from '../support/fixtures.ts';

let server: TestServer;
let api: Api;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
});
after(() => server.close());

const rename = (id: string, name: string, ifMatch?: string) =>
  api.patch(
    `/api/log/activity/${id}`,
    { data: { type: 'log--activity', id, attributes: { name } } },
    ifMatch ? { 'If-Match': ifMatch } : undefined,
  );

async function newLog(name: string): Promise<{ id: string; etag: string }> {
  const res = await api.post('/api/log/activity', {
    data: { type: 'log--activity', attributes: { name, status: 'done', timestamp: '2024-05-01T08:00:00Z' } },
  });
  assert.equal(res.status, 201, res.text);
  const etag = res.headers.get('etag');
  assert.match(etag ?? '', /^"\d+"$/, 'a created record comes with its ETag');
  return { id: res.body.data.id, etag: etag! };
}

test("GET, POST and PATCH carry the record's ETag, its version in the change feed; If-None-Match gives 304 until it changes", async () => {
  const log = await newLog('Tagged');
  const got = await api.get(`/api/log/activity/${log.id}`);
  assert.equal(got.headers.get('etag'), log.etag, 'the same version until it changes');
  const feed = (await api.get('/api/changes?since=0&page[limit]=500&filter[type]=log--activity')).body.data.find(
    (e: any) => e.id === log.id,
  );
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
  assert.equal(
    (await api.raw('DELETE', `/api/log/activity/${log.id}`, undefined, { 'If-Match': current })).status,
    204,
  );
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
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 200, 200, 200, 200, 200],
  );
  const tags = answers.map((a) => a.headers.get('etag'));
  assert.equal(new Set(tags).size, tags.length, `every save its own ETag: ${tags.join(' ')}`);
  // The last save's version is the record's now, and the feed's.
  const current = (await api.get(`/api/log/activity/${log.id}`)).headers.get('etag');
  assert.equal(
    current,
    tags
      .map((t) => Number(t!.replace(/"/g, '')))
      .sort((a, b) => b - a)
      .map((v) => `"${v}"`)[0],
  );
});

test("PATCHes sent at once that each replace a log's assets: every one 200 and the log holds one whole set, never a 409 from two saves' rows colliding", async () => {
  const assets = [];
  for (const name of ['Tractor', 'Seeder', 'Harrow']) {
    const res = await api.post('/api/asset/equipment', { data: { type: 'asset--equipment', attributes: { name } } });
    assert.equal(res.status, 201, res.text);
    assets.push(ref(res.body.data));
  }
  const sets = [[assets[0]!], [assets[0]!, assets[1]!], [assets[1]!, assets[2]!], assets];
  for (let round = 0; round < 3; round++) {
    const log = await newLog(`Field day ${round}`);
    // Half through the record, half through its relationship route: both replace the side rows.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        i % 2
          ? api.patch(`/api/log/activity/${log.id}/relationships/asset`, { data: sets[i % sets.length] })
          : api.patch(`/api/log/activity/${log.id}`, {
              data: { type: 'log--activity', id: log.id, relationships: { asset: { data: sets[i % sets.length] } } },
            }),
      ),
    );
    // A relationship route answers 204 when what it stored is what was sent, as Drupal does.
    const ok = answers.map((a, i) => a.status === 200 || (i % 2 === 1 && a.status === 204));
    assert.ok(ok.every(Boolean), answers.map((a) => `${a.status} ${a.text.slice(0, 160)}`).join('\n'));
    const stored = (
      (await api.get(`/api/log/activity/${log.id}`)).body.data.relationships.asset.data as Array<{ id: string }>
    )
      .map((r) => r.id)
      .sort();
    assert.ok(
      sets.some(
        (set) =>
          set
            .map((a) => a.id)
            .sort()
            .join() === stored.join(),
      ),
      `the log holds one of the sets sent, whole: ${stored.join()}`,
    );
  }
});

test('PATCHes with and without If-Match racing on one record: each a 200 or a 412, never a 5xx', async () => {
  for (let round = 0; round < 4; round++) {
    const log = await newLog(`Mixed ${round}`);
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => rename(log.id, `Mixed ${round}.${i}`, i % 2 ? log.etag : undefined)),
    );
    for (const a of answers) assert.ok(a.status === 200 || a.status === 412, `${a.status}: ${a.text.slice(0, 200)}`);
    assert.ok(
      answers.filter((_, i) => i % 2 === 0).every((a) => a.status === 200),
      'without If-Match every save goes through',
    );
  }
});

/** The version an ETag names, as a number, for comparing which is newer. */
const versionIn = (etag: string | null) => Number(/^"(\d+)/.exec(etag ?? '')?.[1] ?? NaN);

test("a relationship route answers with its record's ETag; POST, PATCH and DELETE there honour If-Match (412 when the record changed) and answer with its new one", async () => {
  const tractor = await api.create('asset--equipment', { name: 'Tagged tractor' });
  const plough = await api.create('asset--equipment', { name: 'Tagged plough' });
  const log = await newLog('Ploughing');
  const path = `/api/log/activity/${log.id}/relationships/asset`;
  const got = await api.get(path);
  assert.equal(got.headers.get('etag'), log.etag, "the relationship is the record's: its ETag");
  assert.equal((await api.get(path, { 'If-None-Match': log.etag })).status, 304);

  const added = await api.post(
    path,
    { data: [{ type: 'asset--equipment', id: tractor.id }] },
    { 'If-Match': log.etag },
  );
  assert.equal(added.status, 204, added.text);
  const afterAdd = added.headers.get('etag');
  assert.ok(versionIn(afterAdd) > versionIn(log.etag), `a new version: ${afterAdd}`);
  assert.equal((await api.get(`/api/log/activity/${log.id}`)).headers.get('etag'), afterAdd, "the record's ETag now");
  assert.equal(
    (await api.get(path, { 'If-None-Match': log.etag })).status,
    200,
    'a stale If-None-Match gets the relationship',
  );

  // Someone renamed the log meanwhile: a relationship write sent with the older ETag is refused, and changes nothing.
  const renamed = (await rename(log.id, 'Ploughing, renamed')).headers.get('etag')!;
  for (const [method, body] of [
    ['POST', [{ type: 'asset--equipment', id: plough.id }]],
    ['PATCH', []],
    ['DELETE', [{ type: 'asset--equipment', id: tractor.id }]],
  ] as const) {
    const stale = await api.raw(method, path, JSON.stringify({ data: body }), {
      'Content-Type': 'application/vnd.api+json',
      'If-Match': afterAdd!,
    });
    assert.equal(stale.status, 412, `${method}: ${stale.text.slice(0, 300)}`);
    assert.equal(stale.body.errors[0].code, 'precondition_failed');
    assert.equal(stale.headers.get('etag'), renamed, 'the 412 names the version to fetch');
  }
  assert.deepEqual(
    (await api.get(path)).body.data.map((r: { id: string }) => r.id),
    [tractor.id],
    'nothing changed',
  );
  const replaced = await api.patch(
    path,
    { data: [{ type: 'asset--equipment', id: plough.id }] },
    { 'If-Match': renamed },
  );
  assert.equal(replaced.status, 204, replaced.text);
  const removed = await api.raw(
    'DELETE',
    path,
    JSON.stringify({ data: [{ type: 'asset--equipment', id: plough.id }] }),
    { 'Content-Type': 'application/vnd.api+json', 'If-Match': replaced.headers.get('etag')! },
  );
  assert.equal(removed.status, 204, removed.text);
  assert.deepEqual((await api.get(path)).body.data, []);

  // Two offline edits of one relationship sent with the same ETag: one goes through, one is a 412.
  const current = removed.headers.get('etag')!;
  const race = await Promise.all(
    [tractor, plough].map((a) => api.post(path, { data: [{ type: a.type, id: a.id }] }, { 'If-Match': current })),
  );
  assert.deepEqual(race.map((r) => r.status).sort(), [204, 412], race.map((r) => r.text.slice(0, 200)).join(' / '));
  assert.equal((await api.get(path)).body.data.length, 1);
});

test("a related route about one resource (a to-one relationship) carries that resource's ETag and gives 304; one listing several resources carries none", async () => {
  const kg = await api.create('taxonomy_term--unit', { name: 'kg (tagged)' });
  const quantity = await api.create(
    'quantity--standard',
    { measure: 'weight', value: { decimal: '12' } },
    { units: { data: { type: kg.type, id: kg.id } } },
  );
  const unitTag = (await api.get(`/api/taxonomy_term/unit/${kg.id}`)).headers.get('etag');
  assert.match(unitTag ?? '', /^"\d+"$/);
  const related = await api.get(`/api/quantity/standard/${quantity.id}/units`);
  assert.equal(related.status, 200);
  assert.equal(related.body.data.id, kg.id);
  assert.equal(related.headers.get('etag'), unitTag, "the unit's own ETag");
  assert.equal(
    (await api.get(`/api/quantity/standard/${quantity.id}/units`, { 'If-None-Match': unitTag! })).status,
    304,
  );
  await api.patch(`/api/taxonomy_term/unit/${kg.id}`, {
    data: { type: kg.type, id: kg.id, attributes: { name: 'kilogram (tagged)' } },
  });
  const changed = await api.get(`/api/quantity/standard/${quantity.id}/units`, { 'If-None-Match': unitTag! });
  assert.equal(changed.status, 200, 'the unit changed');
  assert.equal(changed.body.data.attributes.name, 'kilogram (tagged)');
  assert.notEqual(changed.headers.get('etag'), unitTag);

  const log = await newLog('Several assets');
  await api.post(`/api/log/activity/${log.id}/relationships/asset`, {
    data: [ref(await api.create('asset--equipment', { name: 'One' }))],
  });
  const many = await api.get(`/api/log/activity/${log.id}/asset`);
  assert.equal(many.status, 200);
  assert.equal(many.headers.get('etag'), null, 'a list of resources is not one resource');
});

test("a file upload answers with the created file's ETag (one file); an upload into a record's field answers with the record's new ETag", async () => {
  const octet = (name: string) => ({
    'Content-Type': 'application/octet-stream',
    'Content-Disposition': `file; filename="${name}"`,
  });
  const created = await api.raw('POST', '/api/log/activity/file', 'day,kg\n1,12\n', octet('yield.csv'));
  assert.equal(created.status, 201, created.text);
  const tag = created.headers.get('etag');
  assert.match(tag ?? '', /^"\d+"$/);
  assert.equal(
    (await api.get(`/api/file/file/${created.body.data.id}`)).headers.get('etag'),
    tag,
    "the file's own ETag",
  );

  const log = await newLog('With files');
  const attached = await api.raw('POST', `/api/log/activity/${log.id}/file`, 'day,kg\n2,14\n', octet('more.csv'));
  assert.equal(attached.status, 200, attached.text);
  assert.equal(attached.body.data.length, 1);
  const logNow = (await api.get(`/api/log/activity/${log.id}`)).headers.get('etag');
  assert.ok(versionIn(logNow) > versionIn(log.etag), 'the log has a new version');
  assert.equal(attached.headers.get('etag'), logNow, "the answer carries it, as a relationship's write does");
});

test('If-Match tells nobody without the right to write a record that it changed: a viewer’s PATCH, DELETE and relationship write are refused as before, never 412 with the version', async () => {
  const { addUser } = await import('../oauth/helpers.ts');
  const { passwordToken, request } = await import('../support/http.ts');
  const log = await newLog('Not yours to change');
  const viewer = await addUser(server, ['farm_viewer']);
  const as = new Api(server.url, await passwordToken(server.url, viewer.name, viewer.password));
  const stale = { 'If-Match': '"1"' };
  const answers = [
    await as.patch(
      `/api/log/activity/${log.id}`,
      { data: { type: 'log--activity', id: log.id, attributes: { name: 'x' } } },
      stale,
    ),
    await request(`${server.url}/api/log/activity/${log.id}`, { method: 'DELETE', token: as.token, headers: stale }),
    await as.patch(`/api/log/activity/${log.id}/relationships/owner`, { data: [] }, stale),
  ];
  for (const a of answers) {
    assert.equal(a.status, 403, a.text);
    assert.equal(a.headers.get('etag'), null, 'no version given away');
  }
  assert.equal((await api.get(`/api/log/activity/${log.id}`)).headers.get('etag'), log.etag, 'nothing changed');
});

test("an upload into a record's field is a write of the record: a stale If-Match is a 412 that stores nothing, and the 200 carries the record's new ETag", async () => {
  const log = await newLog('With a photo of the soil');
  const stale = log.etag;
  const renamed = await rename(log.id, 'Soil, renamed elsewhere', stale);
  const current = renamed.headers.get('etag')!;
  const upload = (ifMatch: string) =>
    api.raw('POST', `/api/log/activity/${log.id}/file`, 'soil notes', {
      'Content-Type': 'application/octet-stream',
      'Content-Disposition': 'file; filename="soil.txt"',
      'If-Match': ifMatch,
    });
  const refused = await upload(stale);
  assert.equal(refused.status, 412, refused.text.slice(0, 300));
  assert.equal(refused.headers.get('etag'), current, 'the 412 names the version to fetch');
  assert.deepEqual(
    (await api.get(`/api/log/activity/${log.id}`)).body.data.relationships.file.data,
    [],
    'nothing attached',
  );
  const files = await api.get('/api/file/file');
  assert.ok(!files.body.data.some((f: any) => f.attributes.filename === 'soil.txt'), 'no file stored');

  const accepted = await upload(current);
  assert.equal(accepted.status, 200, accepted.text.slice(0, 300));
  const after = await api.get(`/api/log/activity/${log.id}`);
  assert.equal(after.body.data.relationships.file.data.length, 1);
  assert.equal(
    accepted.headers.get('etag'),
    after.headers.get('etag'),
    "the answer carries the record's new ETag, for the next write",
  );
  assert.notEqual(accepted.headers.get('etag'), current);
});

test('If-None-Match names a representation: the tag of the whole record is no 304 for a sparse fieldset, and a weak tag (from a compressing proxy) matches, as RFC 9110 compares for GET', async () => {
  const log = await newLog('Representations');
  const whole = await api.get(`/api/log/activity/${log.id}`);
  const sparsePath = `/api/log/activity/${log.id}?fields[log--activity]=name`;
  const sparse = await api.get(sparsePath);
  const sparseTag = sparse.headers.get('etag')!;
  assert.notEqual(sparseTag, whole.headers.get('etag'));
  assert.equal(
    (await api.get(sparsePath, { 'If-None-Match': whole.headers.get('etag')! })).status,
    200,
    "the whole record's tag is not this representation's",
  );
  assert.equal((await api.get(sparsePath, { 'If-None-Match': sparseTag })).status, 304);
  assert.equal(
    (await api.get(`/api/log/activity/${log.id}`, { 'If-None-Match': `W/${whole.headers.get('etag')}` })).status,
    304,
    'a weak tag of the same version',
  );
  assert.equal(
    (await api.get(`/api/log/activity/${log.id}`, { 'If-None-Match': `"1", ${whole.headers.get('etag')}` })).status,
    304,
    'one of a list',
  );
});
