// On PostgreSQL the hot statements are prepared once per connection (storage/sql.ts). A schema
// change made while the server runs (a migration from another process, an upgrade in progress)
// leaves them planned for the old schema; the server must go on answering, not fail with 500s.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';

const postgresOnly = { skip: process.env.DATABASE_URL ? false : 'statements are prepared on PostgreSQL only' };

let server: TestServer;
let token: string;
before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
});
after(() => server.close());

test(
  'a column added while the server runs breaks no request for good: at most one 503 to retry, then every write and read answers',
  postgresOnly,
  async () => {
    const field = await request(`${server.url}/api/asset/land`, {
      method: 'POST',
      token,
      json: {
        data: {
          type: 'asset--land',
          attributes: {
            name: 'North field',
            land_type: 'field',
            is_fixed: true,
            intrinsic_geometry: { value: 'POINT (1 2)' },
          },
        },
      },
    });
    assert.equal(field.status, 201, field.text);
    const post = (name: string) =>
      request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: {
          data: {
            type: 'log--activity',
            attributes: { name },
            relationships: { location: { data: [{ type: 'asset--land', id: field.body.data.id }] } },
          },
        },
      });
    // Each reads the field with every column (its geometry for the log's), prepared on first use.
    for (const name of ['Before 1', 'Before 2']) assert.equal((await post(name)).status, 201);

    await server.ctx.db.knex.raw('ALTER TABLE asset ADD COLUMN added_by_a_migration integer');

    const statuses: number[] = [];
    const saved: string[] = [];
    for (const name of ['After 1', 'After 2', 'After 3', 'After 4']) {
      const res = await post(name);
      statuses.push(res.status);
      if (res.status === 201) saved.push(name);
      else {
        assert.equal(res.status, 503, res.text);
        assert.equal(res.headers.get('retry-after'), '1');
      }
    }
    assert.ok(statuses.filter((s) => s === 503).length <= 1, `statuses ${statuses.join(', ')}`);
    assert.equal(statuses.at(-1), 201);
    const read = await request(`${server.url}/api/asset/land/${field.body.data.id}`, { token });
    assert.equal(read.status, 200, read.text);
    const logs = await request(
      `${server.url}/api/log/activity?filter[name][operator]=STARTS_WITH&filter[name][value]=After`,
      { token },
    );
    assert.deepEqual(logs.body.data.map((l: { attributes: { name: string } }) => l.attributes.name).sort(), saved);
  },
);
