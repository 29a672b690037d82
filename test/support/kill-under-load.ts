/**
 * Write load on a cluster (support/cluster.ts) while processes are killed with SIGKILL and started
 * again (issue 26): 16 clients create, edit and delete records with UUIDs of their own choosing.
 * Checks that nothing acknowledged is lost, nothing is doubled, and no answer is a 5xx but the
 * proxy's for a request the kill cut off; returns the figures. With `seconds` 0 it kills once, and
 * the load runs until the killed process serves again, and a second more.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { adminToken, PROXY_RESET, type Cluster } from './cluster.ts';
import { request } from './http.ts';

export interface KillOptions {
  clients: number;
  seconds: number;
  killEvery: number;
}

export async function killUnderLoad(cluster: Cluster, options: KillOptions): Promise<Record<string, number>> {
  const token = await adminToken(cluster);
  /** Each record's last acknowledged name; null once its delete was acknowledged. */
  const acknowledged = new Map<string, string | null>();
  /** Records whose last request the kill cut off: either outcome is right for them. */
  const inDoubt = new Set<string>();
  const counts = { creates: 0, edits: 0, deletes: 0, cutOff: 0 };
  let seed = 11;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  let stop = false;

  /** One request; false when the proxy says the process reset it (the kill), which leaves the record in doubt. */
  const send = async (
    id: string,
    path: string,
    init: { method: string; json?: unknown },
    ok: number[],
  ): Promise<boolean> => {
    const res = await request(`${cluster.url}${path}`, { ...init, token });
    if (res.status === 502 && res.headers.get(PROXY_RESET)) {
      inDoubt.add(id);
      counts.cutOff++;
      return false;
    }
    assert.ok(ok.includes(res.status), `${init.method} ${path} answered ${res.status}: ${res.text}`);
    return true;
  };
  const client = async (c: number) => {
    const mine: string[] = [];
    for (let n = 0; !stop; n++) {
      const roll = random();
      const name = `load-c${c}-n${n}`;
      if (mine.length > 3 && roll < 0.2) {
        const id = mine.splice(Math.floor(random() * mine.length), 1)[0]!;
        // A record whose create the kill cut off may not exist: then its delete answers 404, and either way it is gone.
        const doubted = inDoubt.delete(id);
        if (await send(id, `/api/log/activity/${id}`, { method: 'DELETE' }, doubted ? [204, 404] : [204]))
          (acknowledged.set(id, null), counts.deletes++);
      } else if (mine.length > 0 && roll < 0.5) {
        const id = mine[Math.floor(random() * mine.length)]!;
        if (inDoubt.has(id)) continue;
        if (
          await send(
            id,
            `/api/log/activity/${id}`,
            { method: 'PATCH', json: { data: { type: 'log--activity', id, attributes: { name } } } },
            [200],
          )
        )
          (acknowledged.set(id, name), counts.edits++);
      } else {
        const id = randomUUID();
        mine.push(id);
        if (
          await send(
            id,
            '/api/log/activity',
            { method: 'POST', json: { data: { type: 'log--activity', id, attributes: { name, status: 'done' } } } },
            [201],
          )
        )
          (acknowledged.set(id, name), counts.creates++);
      }
    }
  };

  const load = Promise.all(Array.from({ length: options.clients }, (_, c) => client(c)));
  const started = Date.now();
  let kills = 0;
  try {
    do {
      await new Promise((resolve) => setTimeout(resolve, options.seconds ? options.killEvery * 1000 : 1000));
      await cluster.restart(Math.floor(random() * cluster.servers.length));
      kills++;
    } while (Date.now() - started < options.seconds * 1000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  } finally {
    stop = true;
    await load;
  }

  const knex = knexFactory({ client: 'pg', connection: cluster.database.env.DATABASE_URL });
  try {
    const stored = new Map<string, string>();
    // The records the load wrote (its names start with load-; the cluster may hold others).
    for (const row of await knex('log')
      .where('bundle', 'activity')
      .andWhere('name', 'like', 'load-%')
      .select('uuid', 'name')) {
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
    // A record created and then renamed keeps its load- name, so every one the clients wrote is among those read.
    assert.ok(counts.creates > 0 && kills > 0);
  } finally {
    await knex.destroy();
  }
  return { processes: cluster.servers.length, kills, ...counts, lost: 0 };
}
