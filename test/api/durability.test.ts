// What an acknowledged write survives on SQLite: by default the write-ahead log is synced on every
// commit (synchronous=FULL), so a power cut cannot take back a 2xx; NORMAL is a documented opt-in.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../support/server.ts';
import { loadConfig } from '../../runtime/config.ts';

const sqliteOnly = { skip: process.env.DATABASE_URL ? 'SQLite setting' : false };

async function synchronousOf(env: Record<string, string> = {}): Promise<number> {
  const server = await startTestServer({ env });
  try {
    const rows = (await server.ctx.db.knex.raw('PRAGMA synchronous')) as Array<{ synchronous: number }>;
    return Number(rows[0]!.synchronous);
  } finally {
    await server.close();
  }
}

test('SQLite syncs every commit by default (synchronous=FULL)', sqliteOnly, async () => {
  assert.equal(await synchronousOf(), 2, 'PRAGMA synchronous 2 is FULL');
});

test('TILTH_SQLITE_SYNCHRONOUS=NORMAL relaxes it, and a bad value names the setting', sqliteOnly, async () => {
  assert.equal(await synchronousOf({ TILTH_SQLITE_SYNCHRONOUS: 'normal' }), 1, 'PRAGMA synchronous 1 is NORMAL');
  assert.throws(() => loadConfig({ TILTH_SQLITE_SYNCHRONOUS: 'OFF' }), /TILTH_SQLITE_SYNCHRONOUS/);
});
