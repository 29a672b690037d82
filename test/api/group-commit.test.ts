// Writes that arrive together on SQLite share one COMMIT (one sync of the write-ahead log), each in
// its own savepoint: every acknowledged write is committed before its answer, a failing write
// leaves no trace, and it undoes nobody else's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'SQLite group commit (PostgreSQL commits each transaction)' : false };

let server: TestServer;
let token: string;
let equipment: string[];
before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
  equipment = [];
  for (const name of ['Seed drill', 'Harrow']) {
    const r = await request(`${server.url}/api/asset/equipment`, { method: 'POST', token, json: { data: { type: 'asset--equipment', attributes: { name } } } });
    assert.equal(r.status, 201, r.text);
    equipment.push(r.body.data.id);
  }
});
after(() => server.close());

/**
 * The transactions the server opens while `work` runs (Knex reports every statement it sends):
 * each ends in one COMMIT or ROLLBACK, and each COMMIT is one sync of the write-ahead log.
 */
async function countingTransactions<T>(work: () => Promise<T>): Promise<{ result: T; transactions: number }> {
  let transactions = 0;
  const listener = (q: { sql?: string }) => {
    if (/^BEGIN\b/i.test(q.sql ?? '')) transactions++;
  };
  server.ctx.db.knex.on('query', listener);
  try {
    return { result: await work(), transactions };
  } finally {
    server.ctx.db.knex.off('query', listener);
  }
}

const log = (name: string, id?: string) => ({
  data: {
    type: 'log--activity',
    ...(id ? { id } : {}),
    attributes: { name, status: 'done' },
    relationships: { asset: { data: equipment.map((a) => ({ type: 'asset--equipment', id: a })) } },
  },
});

test('writes sent together share commits, and each acknowledged one is readable at once', sqliteOnly, async () => {
  const names = Array.from({ length: 12 }, (_, i) => `Together ${i} ${randomUUID()}`);
  const { result, transactions } = await countingTransactions(() =>
    Promise.all(names.map((name) => request(`${server.url}/api/log/activity`, { method: 'POST', token, json: log(name) }))),
  );
  assert.deepEqual(result.map((r) => r.status), names.map(() => 201), result.map((r) => r.text).join('\n'));
  assert.ok(transactions >= 1 && transactions < names.length, `12 writes sent at once took ${transactions} transactions`);
  for (const [i, r] of result.entries()) {
    const read = await request(`${server.url}/api/log/activity/${r.body.data.id}`, { token });
    assert.equal(read.status, 200);
    assert.equal(read.body.data.attributes.name, names[i]);
    assert.deepEqual(read.body.data.relationships.asset.data.map((a: { id: string }) => a.id), equipment);
  }
});

test('a write that fails inside a shared commit leaves no trace and undoes no other write', sqliteOnly, async () => {
  const tag = randomUUID();
  const contested = randomUUID();
  const racers = Array.from({ length: 5 }, (_, i) => `Racer ${i} ${tag}`);
  const others = Array.from({ length: 5 }, (_, i) => `Other ${i} ${tag}`);
  const revisionsBefore = Number((await server.ctx.db.knex('entity_revision').where('entity_type', 'log').count({ n: '*' }))[0]!.n);
  const { result, transactions } = await countingTransactions(() =>
    Promise.all([
      ...racers.map((name) => request(`${server.url}/api/log/activity`, { method: 'POST', token, json: log(name, contested) })),
      ...others.map((name) => request(`${server.url}/api/log/activity`, { method: 'POST', token, json: log(name) })),
    ]),
  );
  const racerStatuses = result.slice(0, 5).map((r) => r.status).sort();
  assert.deepEqual(racerStatuses, [201, 409, 409, 409, 409], result.map((r) => r.text).join('\n'));
  assert.deepEqual(result.slice(5).map((r) => r.status), [201, 201, 201, 201, 201]);
  assert.ok(transactions < 10, `10 writes sent at once took ${transactions} transactions`);

  const listed = await request(`${server.url}/api/log/activity?filter[name][operator]=CONTAINS&filter[name][value]=${tag}&page[limit]=50`, { token });
  const found = listed.body.data.map((r: { attributes: { name: string } }) => r.attributes.name).sort();
  const winner = racers[result.slice(0, 5).findIndex((r) => r.status === 201)]!;
  assert.deepEqual(found, [...others, winner].sort(), 'the five others and the one racer that won, nothing of the four that lost');
  // One revision per record created: the losers' savepoints took theirs back.
  const revisionsAfter = Number((await server.ctx.db.knex('entity_revision').where('entity_type', 'log').count({ n: '*' }))[0]!.n);
  assert.equal(revisionsAfter - revisionsBefore, 6);
  const winnerRead = await request(`${server.url}/api/log/activity/${contested}`, { token });
  assert.equal(winnerRead.body.data.attributes.name, winner);
  assert.equal(winnerRead.body.data.relationships.asset.data.length, 2);
});
