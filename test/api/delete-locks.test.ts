// Deleting a record beside saves of the records it writes (issue: deletions that write other
// records lock them first): a group deleted while its members are moved, a location deleted while
// the log that moves assets into it is saved, a log deleted while its quantity is given to another
// log. On PostgreSQL each request has a transaction of its own and these ran side by side; every
// answer must be one a client can act on (never a deadlock's 409 or a 500), and what is left must
// be what one order of the requests would leave. On SQLite (one writer) the same must hold.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { Api, ref } from '../support/fixtures.ts';
import type { ApiResponse } from '../support/http.ts';

let server: TestServer;
let api: Api;

before(async () => {
  const started = await startTestServerAsAdmin();
  server = started.server;
  api = new Api(server.url, started.token);
});
after(() => server.close());

/**
 * Rounds of each race: enough that each test failed on every one of several runs before its fix
 * on PostgreSQL (a race is probabilistic; the location's save lands in its window less often).
 */
const ROUNDS = 4;
const LOCATION_ROUNDS = 6;
const NOW = Math.floor(Date.now() / 1000);
const ids = (data: Array<{ id: string }>) => data.map((r) => r.id);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A deadlock PostgreSQL broke, or a write that collided: what these tests must never see. */
const collided = (a: ApiResponse) => a.status >= 500 || (a.status === 409 && /collided/.test(a.text));
const report = (answers: Array<{ what: string; a: ApiResponse }>) => answers.map(({ what, a }) => `${what} ${a.status} ${a.text.slice(0, 200)}`).join('\n');

test('a group deleted while its members are moved and another asset is assigned to it: every request answers; no asset is left in it or following its moves', async () => {
  const [paddock, barn] = await Promise.all(['Paddock', 'Barn'].map((name) => api.create('asset--land', { name, land_type: 'paddock', is_location: true })));
  const log = (attributes: Record<string, unknown>, relationships: Record<string, unknown>) =>
    api.post('/api/log/activity', { data: { type: 'log--activity', attributes: { status: 'done', ...attributes }, relationships } });
  // Made before the rounds, all at once: a group in the barn, its three members, and two assets
  // that have never moved (they would be in the barn only as the group's members).
  const rounds = await Promise.all(
    Array.from({ length: ROUNDS }, (_, round) =>
      Promise.all(
        [0, 1, 2].map(async (g) => {
          const group = await api.create('asset--group', { name: `Herd ${round}.${g}` });
          const [first, second, ...members] = await Promise.all([0, 1, 2, 3, 4].map((m) => api.create('asset--equipment', { name: `Mower ${round}.${g}.${m}` })));
          const made = await Promise.all([
            log({ timestamp: NOW - 600, is_group_assignment: true }, { asset: { data: members.map(ref) }, group: { data: [ref(group)] } }),
            log({ timestamp: NOW - 500, is_movement: true }, { asset: { data: [ref(group)] }, location: { data: [ref(barn)] } }),
          ]);
          for (const res of made) assert.equal(res.status, 201, res.text);
          return { group, members, newcomers: [first!, second!] };
        }),
      ),
    ),
  );
  const move = (assets: any[], at: number) => log({ timestamp: NOW - at, is_movement: true }, { asset: { data: assets.map(ref) }, location: { data: [ref(paddock)] } });
  const assign = (asset: any, group: any) => log({ timestamp: NOW - 400, is_group_assignment: true }, { asset: { data: [ref(asset)] }, group: { data: [ref(group)] } });
  const assigned: ApiResponse[] = [];
  for (const herds of rounds) {
    const answers = await Promise.all(
      herds.flatMap(({ group, members, newcomers }, i) => [
        ...[300, 200, 100].map((at) => move(members, at).then((a) => ({ what: 'move', a }))),
        ...newcomers.map((asset, k) => sleep(3 * k).then(() => assign(asset, group)).then((a) => ({ what: 'assign', a }))),
        // Spread over a few milliseconds: the delete lands before, inside and after the others.
        sleep(2 * i).then(() => api.delete(`/api/asset/group/${group.id}`)).then((a) => ({ what: 'delete group', a })),
      ]),
    );
    assert.ok(!answers.some(({ a }) => collided(a)), report(answers));
    // An assignment after the delete names a group that is gone: refused (4xx).
    assert.ok(answers.every(({ what, a }) => a.status === { move: 201, assign: 201, 'delete group': 204 }[what] || (what === 'assign' && a.status >= 400 && a.status < 500)), report(answers));
    assigned.push(...answers.filter((x) => x.what === 'assign').map((x) => x.a));
  }
  const groupAndPlace = async (asset: any) => {
    const now = (await api.get(`/api/asset/equipment/${asset.id}`)).body.data;
    return { name: now.attributes.name, group: ids(now.relationships.group.data), location: ids(now.relationships.location.data) };
  };
  const herds = rounds.flat();
  for (const { name, group, location } of await Promise.all(herds.flatMap((h) => h.members).map(groupAndPlace))) {
    assert.deepEqual({ name, group, location }, { name, group: [], location: [paddock.id] }, 'a member is in no group once its group is gone, and where it was moved');
  }
  for (const { name, group, location } of await Promise.all(herds.flatMap((h) => h.newcomers).map(groupAndPlace))) {
    assert.deepEqual({ name, group, location }, { name, group: [], location: [] }, `an asset assigned to the deleted group does not stay in the barn with it:\n${assigned.map((a) => a.status).join(' ')}`);
  }
});

test('a location deleted while the movement log into it is saved: every request answers; the log loses the location, the asset its place', async () => {
  const rounds = await Promise.all(
    Array.from({ length: LOCATION_ROUNDS }, (_, round) =>
      Promise.all(
        Array.from({ length: 10 }, async (_, s) => {
          const site = await api.create('asset--land', { name: `Field ${round}.${s}`, land_type: 'field', is_location: true });
          const asset = await api.create('asset--equipment', { name: `Tractor ${round}.${s}` });
          const res = await api.post('/api/log/activity', {
            data: { type: 'log--activity', attributes: { name: `Move ${round}.${s}`, timestamp: NOW - 60, status: 'done', is_movement: true }, relationships: { asset: { data: [ref(asset)] }, location: { data: [ref(site)] } } },
          });
          assert.equal(res.status, 201, res.text);
          return { site, asset, log: res.body.data, etag: res.headers.get('ETag')! };
        }),
      ),
    ),
  );
  // farmOS clients send the whole record back: the location too, as it was; and with If-Match,
  // as an offline client sends it.
  const save = (log: any, site: any, etag: string) =>
    api.patch(`/api/log/activity/${log.id}`, { data: { type: 'log--activity', id: log.id, attributes: { name: `${log.attributes.name}, renamed` }, relationships: { location: { data: [ref(site)] } } } }, { 'If-Match': etag });
  for (const pairs of rounds) {
    const answers = await Promise.all(
      pairs.flatMap(({ site, log, etag }, s) => [
        // Spread over a few milliseconds: the save lands before, inside and after the delete.
        sleep(s).then(() => save(log, site, etag)).then((a) => ({ what: 'patch', a })),
        api.delete(`/api/asset/land/${site.id}`).then((a) => ({ what: 'delete location', a })),
      ]),
    );
    assert.ok(!answers.some(({ a }) => collided(a)), report(answers));
    // A PATCH after the delete finds the log changed by it (412), or names a location that is gone (4xx).
    assert.ok(answers.every(({ what, a }) => (what === 'delete location' ? a.status === 204 : a.status === 200 || (a.status >= 400 && a.status < 500))), report(answers));
  }
  await Promise.all(
    rounds.flat().map(async ({ log, asset }) => {
      const saved = (await api.get(`/api/log/activity/${log.id}`)).body.data;
      assert.deepEqual(ids(saved.relationships.location.data), [], 'the log no longer names the deleted location');
      const now = (await api.get(`/api/asset/equipment/${asset.id}`)).body.data;
      assert.deepEqual(ids(now.relationships.location.data), [], 'the asset is in no location');
    }),
  );
});

test("a log deleted while its quantity is given to another log: the quantity stays with the log that got it, or that log's save is refused", async () => {
  const rounds = await Promise.all(
    Array.from({ length: ROUNDS }, (_, round) =>
      Promise.all(
        Array.from({ length: 6 }, async (_, i) => {
          const quantity = await api.create('quantity--standard', { label: `Bales ${round}.${i}`, measure: 'count', value: { decimal: '10' } });
          const first = await api.create('log--harvest', { name: `Cut ${round}.${i}`, status: 'done', timestamp: NOW - 60 }, { quantity: { data: [ref(quantity)] } });
          const second = await api.create('log--harvest', { name: `Baled ${round}.${i}`, status: 'done', timestamp: NOW - 30 });
          return { quantity, first, second };
        }),
      ),
    ),
  );
  const outcomes: Array<{ quantity: any; second: any; attached: ApiResponse; all: string }> = [];
  for (const cases of rounds) {
    const answers = await Promise.all(
      cases.flatMap(({ quantity, first, second }, i) => [
        api.patch(`/api/log/harvest/${second.id}`, { data: { type: 'log--harvest', id: second.id, relationships: { quantity: { data: [ref(quantity)] } } } }).then((a) => ({ what: 'attach', a })),
        // Spread over a few milliseconds: the delete's check lands before, inside and after the save.
        sleep(i).then(() => api.delete(`/api/log/harvest/${first.id}`)).then((a) => ({ what: 'delete log', a })),
      ]),
    );
    assert.ok(!answers.some(({ a }) => collided(a)), report(answers));
    assert.ok(answers.every(({ what, a }) => (what === 'delete log' ? a.status === 204 : a.status === 200 || (a.status >= 400 && a.status < 500))), report(answers));
    cases.forEach(({ quantity, second }, i) => outcomes.push({ quantity, second, attached: answers[2 * i]!.a, all: report(answers) }));
  }
  await Promise.all(
    outcomes.map(async ({ quantity, second, attached, all }) => {
      const held = ids((await api.get(`/api/log/harvest/${second.id}`)).body.data.relationships.quantity.data);
      const kept = (await api.get(`/api/quantity/standard/${quantity.id}`)).status;
      if (attached.status === 200) {
        // The save said the log has the quantity: it must still have it, and the quantity exist.
        assert.deepEqual(held, [quantity.id], `the log that was given the quantity keeps it:\n${all}`);
        assert.equal(kept, 200, 'the quantity a log holds is not deleted');
      } else {
        // Refused because the quantity went with the deleted log: nothing was saved.
        assert.deepEqual(held, [], all);
        assert.equal(kept, 404, all);
      }
    }),
  );
});
