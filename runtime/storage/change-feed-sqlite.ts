/**
 * The change feed's statements on SQLite (storage/change-feed.ts is the API, and says why reading
 * in position order up to the highest position skips nothing there): positions come from
 * AUTOINCREMENT, and `INSERT OR REPLACE` gives a record's row a new one on each change.
 */
import type { Db } from './records.ts';
import type { FeedDialect } from './dialect.ts';
import { execute, selectRows } from './sql.ts';

const TABLE = 'change_feed';

const upsertSql = new Map<number, string>();

function upsertText(rows: number): string {
  let sql = upsertSql.get(rows);
  if (!sql) {
    sql = `INSERT OR REPLACE INTO ${TABLE} (entity_type, entity_id, bundle, uuid, deleted, changed) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?)').join(', ')}`;
    upsertSql.set(rows, sql);
  }
  return sql;
}

export const sqliteFeed: FeedDialect = {
  async upsert(db: Db, rows: number, bindings) {
    await execute(db, upsertText(rows), bindings);
    return null;
  },

  async read(db, cursor, kinds, limit, now) {
    const [h] = await selectRows<{ h: number | null }>(db, `SELECT MAX(position) AS h FROM ${TABLE}`, []);
    const horizon = { issued: now, txid: '0', position: Number(h?.h ?? 0) };
    const rows = await selectRows(
      db,
      `SELECT position, entity_type, entity_id, bundle, uuid, deleted, changed FROM ${TABLE} WHERE position > ? AND position <= ? AND entity_type || ' ' || bundle IN (SELECT value FROM json_each(?)) ORDER BY position LIMIT ?`,
      [cursor.position, horizon.position, JSON.stringify(kinds), limit + 1],
    );
    return { horizon, rows: rows.map((r) => ({ ...r, txid: '0' })) };
  },

  ahead: (cursor, horizon) => cursor.position > horizon.position,

  fillSql: (table) =>
    `INSERT INTO ${TABLE} (entity_type, entity_id, bundle, uuid, deleted, changed) ` +
    `SELECT CAST(? AS TEXT), id, bundle, uuid, ?, ? FROM "${table}" e ` +
    `WHERE NOT EXISTS (SELECT 1 FROM ${TABLE} f WHERE f.entity_type = ? AND f.entity_id = e.id) ORDER BY id`,
};
