// The database's own read and write doors (issue 40 §5; runtime/storage/database.ts): `db.read`
// gives its statements one state of the database, so a page and its count agree though writes
// commit meanwhile, and refuses writes; `db.write` is acknowledged with its work on disk. On both
// databases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase } from '../support/server.ts';
import { openDatabase } from '../../runtime/storage/database.ts';
import { selectRows } from '../../runtime/storage/sql.ts';

async function withDatabase(body: (db: ReturnType<typeof openDatabase>) => Promise<void>): Promise<void> {
  const database = await createTestDatabase();
  const db = openDatabase({ databaseUrl: database.env.DATABASE_URL ?? null, dataDir: database.env.TILTH_DATA_DIR! });
  try {
    await db.knex.raw('CREATE TABLE t (x INTEGER)');
    await db.write(async (trx) => {
      await trx('t').insert([{ x: 1 }, { x: 2 }]);
    });
    await body(db);
  } finally {
    await db.close();
    await database.drop();
  }
}

const count = async (db: Parameters<typeof selectRows>[0]) =>
  Number((await selectRows<{ n: number }>(db, 'SELECT count(*) AS n FROM t', []))[0]!.n);

test("a read's statements agree though a write commits between them; the next read sees it", async () => {
  await withDatabase(async (db) => {
    const seen = await db.read(async (r) => {
      const rows = (await r('t').select('x').orderBy('x')).map((row: { x: number }) => Number(row.x));
      // A write commits (and is on disk) while the read is open: it does not wait for the read.
      await db.write(async (trx) => {
        await trx('t').insert({ x: 3 });
      });
      return { rows, counted: await count(r) };
    });
    assert.deepEqual(seen, { rows: [1, 2], counted: 2 }, 'the page and its count are of one state');
    assert.equal(await count(db.knex), 3, 'the write was committed');
    assert.equal(await db.read((r) => count(r)), 3, 'a later read sees it');
  });
});

test('a write inside a read is refused and stores nothing', async () => {
  await withDatabase(async (db) => {
    await assert.rejects(
      db.read(async (r) => {
        await r('t').insert({ x: 9 });
      }),
      /read-only|readonly/i,
    );
    assert.equal(await count(db.knex), 2);
  });
});
