// A full disk is the operator's problem, not the client's and not a bug: writes that meet it are
// answered 507 with a JSON:API error saying so, leave no trace and undo no other write; reads go
// on; writing resumes once there is room. (SQLite's max_page_count stands in for the full disk.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'a size limit stands in for the full disk on SQLite only' : false };

let server: TestServer;
let token: string;
before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
});
after(() => server.close());

/** Limit the database file to its current size and `spare` more pages, on the server's writing connection. */
async function diskFullAfter(spare: number): Promise<void> {
  const [{ page_count: pages }] = await server.ctx.db.knex.raw('PRAGMA page_count');
  await server.ctx.db.knex.raw(`PRAGMA max_page_count = ${pages + spare}`);
}

const post = (name: string, notes: string) =>
  request(`${server.url}/api/log/activity`, { method: 'POST', token, json: { data: { type: 'log--activity', attributes: { name, notes: { value: notes, format: 'default' } } } } });

test('writes on a full disk are 507 and leave no trace; reads go on; writing resumes once there is room', sqliteOnly, async () => {
  await diskFullAfter(2);
  const sent = Array.from({ length: 12 }, (_, i) => `Full disk ${i}`);
  const answers = await Promise.all(sent.map((name) => post(name, 'x'.repeat(3000))));
  const saved = new Set<string>();
  for (const [i, res] of answers.entries()) {
    if (res.status === 201) {
      saved.add(sent[i]!);
      continue;
    }
    assert.equal(res.status, 507, res.text);
    assert.equal(res.body.errors[0].code, 'insufficient_storage');
    assert.match(res.body.errors[0].detail, /disk is full/);
  }
  assert.ok(saved.size < sent.length, 'the disk filled up');

  const listed = await request(`${server.url}/api/log/activity?filter[name][operator]=STARTS_WITH&filter[name][value]=Full disk&page[limit]=50`, { token });
  assert.equal(listed.status, 200, listed.text);
  assert.deepEqual(new Set(listed.body.data.map((l: { attributes: { name: string } }) => l.attributes.name)), saved, 'exactly the acknowledged writes are stored');

  await server.ctx.db.knex.raw('PRAGMA max_page_count = 1073741823');
  assert.equal((await post('After room was made', 'x')).status, 201);
});
