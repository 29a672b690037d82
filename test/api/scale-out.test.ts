// Several Tilth processes over one PostgreSQL database and one files folder, behind a round-robin
// proxy (issue 26): what must agree across them lives in the database, and start-up work runs once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, adminToken, type Cluster } from '../support/cluster.ts';
import knexFactory from 'knex';
import { request } from '../support/http.ts';
import { createTestDatabase, startTestServer } from '../support/server.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'the SQLite check' : false };
const postgresOnly = { skip: process.env.DATABASE_URL ? false : 'several processes share a PostgreSQL database only (one SQLite file is one process)' };

let cluster: Cluster;
let token: string;
before(async () => {
  if (!process.env.DATABASE_URL) return;
  // Started within a few milliseconds of each other on an empty database: the cold start.
  cluster = await startCluster({ together: true });
  token = await adminToken(cluster);
});
after(() => cluster?.close());

test('fifty uploads of one file name through three processes at once: fifty distinct files, each download equal to its upload', postgresOnly, async () => {
  const bodies = Array.from({ length: 50 }, (_, i) => `sample,ph\n${i},${(6 + i / 100).toFixed(2)}\n`);
  const answers = await Promise.all(
    bodies.map((body) =>
      request(`${cluster.url}/api/log/observation/file`, { method: 'POST', token, body, headers: { 'Content-Type': 'application/octet-stream', 'Content-Disposition': 'file; filename="soil.csv"' } }),
    ),
  );
  assert.deepEqual(answers.map((a) => a.status), bodies.map(() => 201), answers.find((a) => a.status !== 201)?.text);
  const names = answers.map((a) => a.body.data.attributes.uri.url as string);
  assert.equal(new Set(names).size, 50, 'fifty distinct stored files');
  const downloaded = await Promise.all(names.map((url) => fetch(`${cluster.url}${url}`, { headers: { Authorization: `Bearer ${token}` } }).then((r) => r.text())));
  assert.deepEqual(downloaded, bodies, 'each download equals its upload');
});

test('three processes started at once on an empty database all become healthy, with one administrator and one of each default client', postgresOnly, async (t) => {
  for (const server of cluster.servers) assert.equal((await fetch(`${server.url}/health`)).status, 200);
  const knex = knexFactory({ client: 'pg', connection: cluster.database.env.DATABASE_URL });
  t.after(() => knex.destroy());
  assert.deepEqual((await knex('users').where('bundle', 'user').select('name')).map((r) => r.name), ['admin']);
  assert.deepEqual((await knex('oauth_clients').orderBy('client_id').select('client_id')).map((r) => r.client_id), ['farm', 'fieldkit']);
  assert.deepEqual(await knex('knex_migrations').groupBy('name').havingRaw('count(*) > 1').select('name'), [], 'each migration applied once');
});

test('a second server over one SQLite database is refused, saying that it is unsupported and what to use instead', sqliteOnly, async (t) => {
  const database = await createTestDatabase();
  t.after(() => database.drop());
  const first = await startTestServer({ database });
  t.after(() => first.close());
  await assert.rejects(startTestServer({ database }), /Another Tilth process is already serving the SQLite database in .*not supported.*PostgreSQL/s);
  // The first keeps serving, and once it stops the directory can be served again.
  assert.equal((await fetch(`${first.url}/health`)).status, 200);
  await first.close();
  const again = await startTestServer({ database });
  await again.close();
});
