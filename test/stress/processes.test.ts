// Three Tilth processes over one PostgreSQL database behind a round-robin proxy (issue 26), under
// write load from 16 clients that create, edit and delete records with UUIDs of their own choosing,
// while a process is killed with SIGKILL and started again. Nothing acknowledged is lost, nothing
// is doubled, and no answer is a 5xx but the proxy's for a request the kill cut off. `npm test`
// kills once (the load runs until the killed process serves again, and a second more); `npm run
// stress` runs 120 s and kills a random process every 15 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { startCluster, adminToken, PROXY_RESET } from '../support/cluster.ts';
import { request } from '../support/http.ts';
import { SCALE, report } from './scale.ts';

const postgresOnly = { skip: process.env.DATABASE_URL ? false : 'several processes share a PostgreSQL database only' };

test(`three processes, ${SCALE.processes.clients} writers, processes killed under load: no acknowledged write lost, none doubled, no 5xx`, postgresOnly, async (t) => {
  const cluster = await startCluster();
  t.after(() => cluster.close());
  const token = await adminToken(cluster);
  /** Each record's last acknowledged name; null once its delete was acknowledged. */
  const acknowledged = new Map<string, string | null>();
  /** Records whose last request the kill cut off: either outcome is right for them. */
  const inDoubt = new Set<string>();
  const counts = { creates: 0, edits: 0, deletes: 0, cutOff: 0 };
  let seed = 11;
  const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
  let stop = false;

  /** One request; false when the proxy says the process reset it (the kill), which leaves the record in doubt. */
  const send = async (id: string, path: string, init: { method: string; json?: unknown }, ok: number): Promise<boolean> => {
    const res = await request(`${cluster.url}${path}`, { ...init, token });
    if (res.status === 502 && res.headers.get(PROXY_RESET)) {
      inDoubt.add(id);
      counts.cutOff++;
      return false;
    }
    assert.equal(res.status, ok, `${init.method} ${path} answered ${res.status}: ${res.text}`);
    return true;
  };
  const client = async (c: number) => {
    const mine: string[] = [];
    for (let n = 0; !stop; n++) {
      const roll = random();
      const name = `c${c}-n${n}`;
      if (mine.length > 3 && roll < 0.2) {
        const id = mine.splice(Math.floor(random() * mine.length), 1)[0]!;
        if (await send(id, `/api/log/activity/${id}`, { method: 'DELETE' }, 204)) (acknowledged.set(id, null), counts.deletes++);
      } else if (mine.length > 0 && roll < 0.5) {
        const id = mine[Math.floor(random() * mine.length)]!;
        if (inDoubt.has(id)) continue;
        if (await send(id, `/api/log/activity/${id}`, { method: 'PATCH', json: { data: { type: 'log--activity', id, attributes: { name } } } }, 200)) (acknowledged.set(id, name), counts.edits++);
      } else {
        const id = randomUUID();
        mine.push(id);
        if (await send(id, '/api/log/activity', { method: 'POST', json: { data: { type: 'log--activity', id, attributes: { name, status: 'done' } } } }, 201)) (acknowledged.set(id, name), counts.creates++);
      }
    }
  };

  const load = Promise.all(Array.from({ length: SCALE.processes.clients }, (_, c) => client(c)));
  const started = Date.now();
  let kills = 0;
  try {
    do {
      await new Promise((resolve) => setTimeout(resolve, SCALE.processes.seconds ? SCALE.processes.killEvery * 1000 : 1000));
      await cluster.restart(Math.floor(random() * cluster.servers.length));
      kills++;
    } while (Date.now() - started < SCALE.processes.seconds * 1000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  } finally {
    stop = true;
    await load;
  }

  const knex = knexFactory({ client: 'pg', connection: cluster.database.env.DATABASE_URL });
  t.after(() => knex.destroy());
  const stored = new Map<string, string>();
  for (const row of await knex('log').where('bundle', 'activity').select('uuid', 'name')) {
    assert.ok(!stored.has(row.uuid), `${row.uuid} stored twice`);
    stored.set(row.uuid, row.name);
  }
  let lost = 0;
  for (const [id, name] of acknowledged) {
    if (inDoubt.has(id)) continue;
    if (name === null ? stored.has(id) : stored.get(id) !== name) lost++;
  }
  assert.equal(lost, 0, 'every acknowledged create, edit and delete holds');
  const unknown = [...stored.keys()].filter((id) => !acknowledged.has(id) && !inDoubt.has(id));
  assert.deepEqual(unknown, [], 'no record but those the clients wrote');
  assert.ok(counts.creates > 0 && kills > 0);
  report('processes', { processes: cluster.servers.length, kills, ...counts, lost });
});
