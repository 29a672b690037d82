// Writers racing each other: nothing lost, nothing duplicated, no 5xx.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

let server: TestServer;
let token: string;
before(async () => ({ server, token } = await startTestServerAsAdmin()));
after(() => server.close());

test('ten requests creating the same UUID at once: one 201, nine 409', async () => {
  const id = randomUUID();
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) =>
      request(`${server.url}/api/asset/equipment`, { method: 'POST', token, json: { data: { type: 'asset--equipment', id, attributes: { name: `Racer ${i}` } } } }),
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
      request(`${server.url}/api/log/observation`, { method: 'POST', token, json: { data: { type: 'log--observation', attributes: { name: `Concurrent ${i}`, status: 'done' } } } }),
    ),
  );
  assert.ok(results.every((r) => r.status === 201), results.map((r) => r.status).join(','));
  const names = new Set<string>();
  let next: string | undefined = `${server.url}/api/log/observation?filter[name][operator]=STARTS_WITH&filter[name][value]=Concurrent&filter[name][path]=name`;
  while (next) {
    const page: any = await request(next, { token });
    for (const r of page.body.data) names.add(r.attributes.name);
    next = page.body.links.next?.href;
  }
  assert.equal(names.size, 40);
});
