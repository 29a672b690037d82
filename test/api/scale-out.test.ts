// Several Tilth processes over one PostgreSQL database and one files folder, behind a round-robin
// proxy (issue 26): what must agree across them lives in the database, and start-up work runs once.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, adminToken, type Cluster } from '../support/cluster.ts';
import { request } from '../support/http.ts';

const postgresOnly = { skip: process.env.DATABASE_URL ? false : 'several processes share a PostgreSQL database only (one SQLite file is one process)' };

let cluster: Cluster;
let token: string;
before(async () => {
  if (!process.env.DATABASE_URL) return;
  cluster = await startCluster();
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
