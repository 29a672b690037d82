// SQLite's page cache (TILTH_SQLITE_CACHE_MB). SQLite's own default, 2 MB, holds a few levels of
// a big farm's indexes, so its reads went to the file for most pages; the server keeps 64 MB per
// connection unless told otherwise, and an operator on a small box can set less.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServerAsAdmin } from '../support/server.ts';
import { request } from '../support/http.ts';
import { loadConfig } from '../../runtime/config.ts';
import type { Knex } from 'knex';
import { selectRows } from '../../runtime/storage/sql.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'SQLite setting' : false };

/** cache_size as SQLite reports it (negative: KiB), outside a transaction (the read connection) and inside one (the writer). */
async function cacheSizes(knex: Knex): Promise<{ reader: number; writer: number }> {
  const [read] = await selectRows<{ cache_size: number }>(knex, 'PRAGMA cache_size', []);
  const writer = await knex.transaction(async (trx) => (await selectRows<{ cache_size: number }>(trx, 'PRAGMA cache_size', []))[0]!.cache_size);
  return { reader: read!.cache_size, writer };
}

test('both of the server\'s SQLite connections keep TILTH_SQLITE_CACHE_MB of pages, 64 MB unless set', sqliteOnly, async () => {
  for (const [env, kib] of [[{}, -64 * 1024], [{ TILTH_SQLITE_CACHE_MB: '8' }, -8 * 1024]] as const) {
    const { server, token } = await startTestServerAsAdmin({ env });
    try {
      // The reader opens on its first read, as a request opens it.
      assert.equal((await request(`${server.url}/api/log/activity`, { token })).status, 200);
      assert.deepEqual(await cacheSizes(server.ctx.db.knex), { reader: kib, writer: kib }, JSON.stringify(env));
    } finally {
      await server.close();
    }
  }
  assert.throws(() => loadConfig({ TILTH_SQLITE_CACHE_MB: '0' }), /TILTH_SQLITE_CACHE_MB must be a whole number from 1/);
});
