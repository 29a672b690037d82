// Writes that arrive together on SQLite share one COMMIT (one sync of the write-ahead log), each in
// its own savepoint: every acknowledged write is committed before its answer, a failing write
// leaves no trace, and it undoes nobody else's.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { connectionBeside, startTestServerAsAdmin, type TestServer } from '../support/server.ts';
import { request } from '../support/http.ts';
import { write } from '../../runtime/storage/transactions.ts';

const sqliteOnly = {
  skip: process.env.DATABASE_URL ? 'SQLite group commit (PostgreSQL commits each transaction)' : false,
};

let server: TestServer;
let token: string;
let equipment: string[];
before(async () => {
  ({ server, token } = await startTestServerAsAdmin());
  equipment = [];
  for (const name of ['Seed drill', 'Harrow']) {
    const r = await request(`${server.url}/api/asset/equipment`, {
      method: 'POST',
      token,
      json: { data: { type: 'asset--equipment', attributes: { name } } },
    });
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

test(
  'transactions queued together share one commit; each failing one is rolled back alone; each settles after the commit',
  sqliteOnly,
  async () => {
    const knex = server.ctx.db.knex;
    const other = connectionBeside(server);
    const tag = randomUUID();
    const stored = (name: string) =>
      (other.prepare('SELECT count(*) AS n FROM taxonomy_term WHERE name = ?').get(name) as { n: number }).n;
    try {
      await write(knex, async (trx) => {
        await trx('taxonomy_term').insert({ uuid: randomUUID(), bundle: 'unit', name: `Warm-up ${tag}` });
      });
      const names = Array.from({ length: 8 }, (_, i) => `Queued ${i} ${tag}`);
      // As each settles, what another connection finds on disk.
      const onDisk: number[] = [];
      const { result, transactions } = await countingTransactions(() =>
        Promise.allSettled(
          names.map((name, i) =>
            write(knex, async (trx) => {
              await trx('taxonomy_term').insert({ uuid: randomUUID(), bundle: 'unit', name });
              if (i % 2) throw new Error(`refused ${i}`);
              return i;
            }).finally(() => (onDisk[i] = stored(name))),
          ),
        ),
      );
      assert.ok(transactions < names.length, `8 transactions queued at once took ${transactions}`);
      assert.deepEqual(
        result.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
        [0, 'refused 1', 2, 'refused 3', 4, 'refused 5', 6, 'refused 7'],
      );
      assert.deepEqual(onDisk, [1, 0, 1, 0, 1, 0, 1, 0]);
    } finally {
      other.close();
    }
  },
);

test('writes sent together are each readable as soon as they are answered', sqliteOnly, async () => {
  const names = Array.from({ length: 12 }, (_, i) => `Together ${i} ${randomUUID()}`);
  const result = await Promise.all(
    names.map((name) => request(`${server.url}/api/log/activity`, { method: 'POST', token, json: log(name) })),
  );
  assert.deepEqual(
    result.map((r) => r.status),
    names.map(() => 201),
    result.map((r) => r.text).join('\n'),
  );
  for (const [i, r] of result.entries()) {
    const read = await request(`${server.url}/api/log/activity/${r.body.data.id}`, { token });
    assert.equal(read.status, 200);
    assert.equal(read.body.data.attributes.name, names[i]);
    assert.deepEqual(
      read.body.data.relationships.asset.data.map((a: { id: string }) => a.id),
      equipment,
    );
  }
});

test('racing writes: the ones that fail leave no trace and undo no other write', sqliteOnly, async () => {
  const tag = randomUUID();
  const contested = randomUUID();
  const racers = Array.from({ length: 5 }, (_, i) => `Racer ${i} ${tag}`);
  const others = Array.from({ length: 5 }, (_, i) => `Other ${i} ${tag}`);
  const revisionsBefore = Number(
    (await server.ctx.db.knex('entity_revision').where('entity_type', 'log').count({ n: '*' }))[0]!.n,
  );
  const result = await Promise.all([
    ...racers.map((name) =>
      request(`${server.url}/api/log/activity`, { method: 'POST', token, json: log(name, contested) }),
    ),
    ...others.map((name) => request(`${server.url}/api/log/activity`, { method: 'POST', token, json: log(name) })),
  ]);
  const racerStatuses = result
    .slice(0, 5)
    .map((r) => r.status)
    .sort();
  assert.deepEqual(racerStatuses, [201, 409, 409, 409, 409], result.map((r) => r.text).join('\n'));
  assert.deepEqual(
    result.slice(5).map((r) => r.status),
    [201, 201, 201, 201, 201],
  );

  const listed = await request(
    `${server.url}/api/log/activity?filter[name][operator]=CONTAINS&filter[name][value]=${tag}&page[limit]=50`,
    { token },
  );
  const found = listed.body.data.map((r: { attributes: { name: string } }) => r.attributes.name).sort();
  const winner = racers[result.slice(0, 5).findIndex((r) => r.status === 201)]!;
  assert.deepEqual(
    found,
    [...others, winner].sort(),
    'the five others and the one racer that won, nothing of the four that lost',
  );
  // One revision per record created: the losers' savepoints took theirs back.
  const revisionsAfter = Number(
    (await server.ctx.db.knex('entity_revision').where('entity_type', 'log').count({ n: '*' }))[0]!.n,
  );
  assert.equal(revisionsAfter - revisionsBefore, 6);
  const winnerRead = await request(`${server.url}/api/log/activity/${contested}`, { token });
  assert.equal(winnerRead.body.data.attributes.name, winner);
  assert.equal(winnerRead.body.data.relationships.asset.data.length, 2);
});

/**
 * A command run beside the server, on its own thread: each `commit()` asks it to commit a change
 * to the admin account and waits until it has, or 200 ms (it waits for the server's write lock).
 */
function commandBeside(): { commit(): void; committed(): number; stop(): Promise<number> } {
  const signals = new Int32Array(new SharedArrayBuffer(12)); // asked, done, stop
  const worker = new Worker(
    `const { workerData: { file, signals } } = require('node:worker_threads');
     const db = new (require('better-sqlite3'))(file);
     db.pragma('busy_timeout = 5000');
     // Its commit is quick (no sync), so that it falls within the server's batch.
     db.pragma('synchronous = OFF');
     for (let done = 0; ; ) {
       const asked = Atomics.load(signals, 0);
       if (asked === done) {
         if (Atomics.load(signals, 2)) break;
         Atomics.wait(signals, 0, done, 50);
         continue;
       }
       for (; done < asked; done++) {
         db.prepare("UPDATE users SET changed = changed + 1 WHERE name = 'admin'").run();
         Atomics.add(signals, 1, 1);
         Atomics.notify(signals, 1);
       }
     }`,
    { eval: true, workerData: { file: join(server.config.dataDir, 'tilth.sqlite'), signals } },
  );
  return {
    commit() {
      const before = Atomics.load(signals, 1);
      Atomics.add(signals, 0, 1);
      Atomics.notify(signals, 0);
      Atomics.wait(signals, 1, before, 200);
    },
    committed: () => Atomics.load(signals, 1),
    async stop() {
      Atomics.store(signals, 2, 1);
      Atomics.notify(signals, 0);
      await new Promise((resolve) => worker.once('exit', resolve));
      return Atomics.load(signals, 1);
    },
  };
}

test(
  'a write that only read, first in a shared commit while a command commits beside the server, fails no write after it',
  sqliteOnly,
  async () => {
    const command = commandBeside();
    const knex = server.ctx.db.knex;
    const name = `After a read ${randomUUID()}`;
    try {
      // Queued in this order, in one batch: a transaction that only reads (and, as it ends, sees a
      // command commit beside the server), then one that writes.
      command.commit(); // once first, so that its next commit is quick
      const [read, wrote] = await Promise.allSettled([
        write(knex, async (trx) => {
          await trx('users').where('name', 'admin').first();
          command.commit();
          return 'read';
        }),
        write(knex, async (trx) => {
          await trx('taxonomy_term').insert({ uuid: randomUUID(), bundle: 'unit', name });
          return 'wrote';
        }),
      ]);
      assert.deepEqual(read, { status: 'fulfilled', value: 'read' });
      assert.deepEqual(wrote, { status: 'fulfilled', value: 'wrote' });
      const units = await request(`${server.url}/api/taxonomy_term/unit?filter[name]=${encodeURIComponent(name)}`, {
        token,
      });
      assert.equal(units.body.data.length, 1);
    } finally {
      // The command's commits landed too, the second once the server's was done.
      assert.equal(await command.stop(), 2);
    }
  },
);

test(
  'writes while a command holds the database longer than the busy timeout get 503 with Retry-After, reads go on meanwhile, and writing resumes',
  sqliteOnly,
  async () => {
    const other = connectionBeside(server);
    other.exec('BEGIN IMMEDIATE');
    let released = false;
    try {
      let settled = false;
      const writes = Promise.all(
        [1, 2].map((i) =>
          request(`${server.url}/api/log/activity`, {
            method: 'POST',
            token,
            json: log(`Held ${i}`),
            signal: AbortSignal.timeout(30_000),
          }),
        ),
      ).finally(() => (settled = true));
      // The writes wait for the lock (five seconds) without stopping the server: a read is answered.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const read = await request(`${server.url}/api/log/activity?page[limit]=1`, {
        token,
        signal: AbortSignal.timeout(3000),
      });
      assert.equal(read.status, 200);
      assert.equal(settled, false, 'the writes were still waiting for the lock');
      const results = await writes;
      for (const r of results) {
        assert.equal(r.status, 503, r.text);
        assert.equal(r.body.errors[0].detail, 'The database is busy. Retry in a moment.');
        assert.equal(r.headers.get('retry-after'), '1');
      }
      other.exec('ROLLBACK');
      released = true;
      const after = await request(`${server.url}/api/log/activity`, {
        method: 'POST',
        token,
        json: log('After the hold'),
        signal: AbortSignal.timeout(10_000),
      });
      assert.equal(after.status, 201, after.text);
    } finally {
      if (!released) other.exec('ROLLBACK');
      other.close();
    }
  },
);

test(
  'a transaction committed by hand (knex.transaction() without a body) is on disk when its commit resolves',
  sqliteOnly,
  async () => {
    const knex = server.ctx.db.knex;
    const other = connectionBeside(server);
    try {
      const name = `By hand ${randomUUID()}`;
      const trx = await knex.transaction();
      await trx('taxonomy_term').insert({ uuid: randomUUID(), bundle: 'unit', name });
      await trx.commit();
      assert.equal(
        (other.prepare('SELECT count(*) AS n FROM taxonomy_term WHERE name = ?').get(name) as { n: number }).n,
        1,
      );
    } finally {
      other.close();
    }
  },
);
