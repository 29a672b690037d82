// Writers racing each other: nothing lost, nothing duplicated, no 5xx.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { write } from '../../runtime/storage/transactions.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

test('ten requests creating the same UUID at once: one 201, nine 409', async () => {
  const id = randomUUID();
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      request(`${server.url}/api/asset/equipment`, {
        method: 'POST',
        token,
        json: { data: { type: 'asset--equipment', id, attributes: { name: `Racer ${i}` } } },
      }),
    ),
  );
  const statuses = results.map((r) => r.status).sort();
  assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409, 409, 409]);
  for (const r of results.filter((r) => r.status === 409)) assert.equal(r.body.errors[0].status, '409');
  const list = await request(`${server.url}/api/asset/equipment?filter[id]=${id}`, { token });
  assert.equal(list.body.data.length, 1);
});

test('concurrent creates of different records all land', async () => {
  const results = await Promise.all(
    Array.from({ length: 40 }, (_, i) =>
      request(`${server.url}/api/log/observation`, {
        method: 'POST',
        token,
        json: { data: { type: 'log--observation', attributes: { name: `Concurrent ${i}`, status: 'done' } } },
      }),
    ),
  );
  assert.ok(
    results.every((r) => r.status === 201),
    results.map((r) => r.status).join(','),
  );
  const names = new Set<string>();
  let next: string | undefined =
    `${server.url}/api/log/observation?filter[name][operator]=STARTS_WITH&filter[name][value]=Concurrent&filter[name][path]=name`;
  while (next) {
    const page: any = await request(next, { token });
    for (const r of page.body.data) names.add(r.attributes.name);
    next = page.body.links.next?.href;
  }
  assert.equal(names.size, 40);
});

test('a read is answered while a write transaction is open, and sees only what was committed', async () => {
  const created = await request(`${server.url}/api/asset/equipment`, {
    method: 'POST',
    token,
    json: { data: { type: 'asset--equipment', attributes: { name: 'Seed drill' } } },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.data.id;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let changed!: () => void;
  const inTransaction = new Promise<void>((resolve) => (changed = resolve));
  // A long write (an import, say) holds its transaction open while requests keep coming.
  const writer = write(server.ctx.db.knex, async (trx) => {
    await trx('asset').where('uuid', id).update({ name: 'Seed drill (renamed)' });
    changed();
    await held;
  });
  try {
    await inTransaction;
    const during = await request(`${server.url}/api/asset/equipment/${id}`, {
      token,
      signal: AbortSignal.timeout(5000),
    });
    assert.equal(during.status, 200, 'answered without waiting for the writer');
    assert.equal(during.body.data.attributes.name, 'Seed drill', 'the uncommitted name is not seen');
  } finally {
    release();
    await writer;
  }
  const after = await request(`${server.url}/api/asset/equipment/${id}`, { token });
  assert.equal(after.body.data.attributes.name, 'Seed drill (renamed)', 'the committed name is');
});
