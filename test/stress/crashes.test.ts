// Crashes under load (trust issue, part B 2): the server, in its own process, is killed with
// SIGKILL at a random moment while clients write, then started again on the same database. After
// every restart the database passes its integrity and foreign-key checks, every create answered
// with 201 is there, and every delete answered with 204 stays done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createTestDatabase, ADMIN } from '../support/server.ts';
import { startChildServer } from '../support/child-server.ts';
import { request, passwordToken } from '../support/http.ts';
import { SCALE, report } from './scale.ts';

const CLIENTS = 4;

/** SQLite's own checks of the file a killed server left behind. */
function checkSqliteFile(dataDir: string): void {
  const db = new Database(join(dataDir, 'tilth.sqlite'));
  try {
    assert.deepEqual(db.pragma('integrity_check'), [{ integrity_check: 'ok' }]);
    assert.deepEqual(db.pragma('foreign_key_check'), [], 'foreign keys hold');
  } finally {
    db.close();
  }
}

test(`killed ${SCALE.kills} times under write load, the server loses no acknowledged write`, async () => {
  const database = await createTestDatabase({ migrated: true });
  const live = new Set<string>();
  const deleted = new Set<string>();
  // Deletes the kill cut off: committed or not, either state is right for them.
  const inDoubt = new Set<string>();
  let acknowledged = 0;
  let seed = 7;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  try {
    let token = '';
    for (let round = 0; round < SCALE.kills; round++) {
      const server = await startChildServer(database.env);
      try {
        token ||= await passwordToken(server.url, ADMIN.name, ADMIN.password);
        if (round > 0) await assertDurable(server.url, token, live, deleted);
      } catch (error) {
        await server.kill();
        throw error;
      }

      let killed = false;
      const client = async (c: number) => {
        for (let n = 0; !killed; n++) {
          try {
            const mine = [...live];
            if (mine.length > 10 && random() < 0.25) {
              const id = mine[Math.floor(random() * mine.length)]!;
              live.delete(id);
              inDoubt.add(id);
              const res = await request(`${server.url}/api/log/activity/${id}`, { method: 'DELETE', token });
              inDoubt.delete(id);
              if (res.status === 204) deleted.add(id);
              else assert.ok(res.status === 404 && deleted.has(id), `DELETE answered ${res.status}: ${res.text}`);
            } else {
              const res = await request(`${server.url}/api/log/activity`, {
                method: 'POST',
                token,
                json: {
                  data: { type: 'log--activity', attributes: { name: `r${round}-c${c}-n${n}`, status: 'done' } },
                },
              });
              assert.ok(res.status === 201, `POST answered ${res.status}: ${res.text}`);
              live.add(res.body.data.id);
              acknowledged++;
            }
          } catch (error) {
            if (killed) return; // the request the kill cut off: neither acknowledged nor counted
            throw error;
          }
        }
      };
      const load = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
      await new Promise((resolve) => setTimeout(resolve, 150 + random() * 600));
      killed = true;
      await server.kill();
      await load;
      if (!process.env.DATABASE_URL) checkSqliteFile(database.env.TILTH_DATA_DIR!);
    }
    const server = await startChildServer(database.env);
    try {
      await assertDurable(server.url, token, live, deleted);
      const served = await request(`${server.url}/api/log/activity?page[limit]=1`, { token });
      assert.equal(served.status, 200);
    } finally {
      await server.stop();
    }
    report('crashes', {
      kills: SCALE.kills,
      acknowledgedCreates: acknowledged,
      acknowledgedDeletes: deleted.size,
      deletesCutOff: inDoubt.size,
      lost: 0,
    });
  } finally {
    await database.drop();
  }
});

/** Every acknowledged create is served, every acknowledged delete is gone. */
async function assertDurable(url: string, token: string, live: Set<string>, deleted: Set<string>): Promise<void> {
  const check = async (ids: string[], present: boolean) => {
    for (let i = 0; i < ids.length; i += 50) {
      const chunk = ids.slice(i, i + 50);
      const query = new URLSearchParams({
        'filter[i][condition][path]': 'id',
        'filter[i][condition][operator]': 'IN',
        'page[limit]': '50',
      });
      for (const id of chunk) query.append('filter[i][condition][value][]', id);
      const res = await request(`${url}/api/log/activity?${query}`, { token });
      assert.equal(res.status, 200, res.text);
      const found = new Set(res.body.data.map((r: { id: string }) => r.id));
      for (const id of chunk)
        assert.equal(found.has(id), present, `${id} was acknowledged as ${present ? 'created' : 'deleted'}`);
    }
  };
  await check([...live], true);
  await check([...deleted], false);
}
