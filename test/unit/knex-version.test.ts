// Tilth's SQLite storage extends private parts of Knex (runtime/storage/database.ts: its
// better-sqlite3 dialect's `_query` and `runner`, its SQLite transaction class, and `_query`'s
// use of the connection's `prepare`) to commit in groups and sync before acknowledging (issue 40
// 5); `knex.transaction` itself is no longer changed. A Knex release other than the one read when those
// extensions were written could change what they rely on without a word: this test names it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { KNEX_EXTENDED_RELEASE } from '../../runtime/storage/database.ts';

test('the installed Knex is the release storage/database.ts extends, and package.json pins it', () => {
  const require = createRequire(import.meta.url);
  const installed = (require('knex/package.json') as { version: string }).version;
  const pinned = (require('../../package.json') as { dependencies: Record<string, string> }).dependencies.knex;
  assert.equal(pinned, KNEX_EXTENDED_RELEASE, 'package.json pins the release database.ts was written for (no range)');
  assert.equal(
    installed,
    KNEX_EXTENDED_RELEASE,
    `Knex ${installed} is installed; read runtime/storage/database.ts against it before changing KNEX_EXTENDED_RELEASE`,
  );
});
