/**
 * The change feed's statements on PostgreSQL (storage/change-feed.ts is the API, and says why rows
 * are read in the order of their writing transaction's id below a horizon there): positions come
 * from a sequence when a row is written, not when it commits, so each row also keeps its
 * transaction's id (`txid`, pg_current_xact_id()).
 */
import type { Db } from './records.ts';
import type { FeedDialect } from './dialect.ts';
import { selectRows } from './sql.ts';

const TABLE = 'change_feed';

const upsertSql = new Map<number, string>();

function upsertText(rows: number): string {
  let sql = upsertSql.get(rows);
  if (!sql) {
    sql =
      `INSERT INTO ${TABLE} (entity_type, entity_id, bundle, uuid, deleted, changed, txid) VALUES ${Array.from({ length: rows }, () => '(?, ?, ?, ?, ?, ?, pg_current_xact_id())').join(', ')} ` +
      `ON CONFLICT (entity_type, entity_id) DO UPDATE SET position = nextval('${TABLE}_position_seq'), txid = EXCLUDED.txid, bundle = EXCLUDED.bundle, uuid = EXCLUDED.uuid, deleted = EXCLUDED.deleted, changed = EXCLUDED.changed ` +
      'RETURNING entity_id, position';
    upsertSql.set(rows, sql);
  }
  return sql;
}

/** PostgreSQL array literal of strings, every element quoted. */
function textArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`;
}

const XID_SPACE = 2n ** 32n;

/**
 * The horizon (storage/change-feed.ts, at the top): the least of the snapshot's xmax and the
 * running transactions' ids of this database. pg_stat_activity gives 32-bit ids; each is widened
 * to a 64-bit one by its distance from xmax (a running id is within 2^31 of it, either side).
 */
async function horizonOf(db: Db): Promise<string> {
  const [row] = await selectRows<{ xmax: string; running: string[] | null }>(
    db,
    'SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xmax, ARRAY(SELECT backend_xid::text FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL) AS running',
    [],
  );
  const xmax = BigInt(row!.xmax);
  let h = xmax;
  for (const text of row!.running ?? []) {
    // The signed distance from xmax, modulo 2^32: a running id may lie on either side of it (one
    // handed out after the snapshot lies above, and cannot lower the horizon).
    let distance = (BigInt(text) - (xmax % XID_SPACE)) % XID_SPACE;
    if (distance > XID_SPACE / 2n) distance -= XID_SPACE;
    else if (distance <= -XID_SPACE / 2n) distance += XID_SPACE;
    if (xmax + distance < h) h = xmax + distance;
  }
  return h.toString();
}

export const postgresFeed: FeedDialect = {
  async upsert(db: Db, rows: number, bindings) {
    // selectRows for its RETURNING: a statement prepared once per connection, not parsed per write.
    return selectRows<{ entity_id: number; position: number | string }>(db, upsertText(rows), bindings);
  },

  async read(db, cursor, kinds, limit, now) {
    // The horizon first, in a statement of its own: see storage/change-feed.ts.
    const horizon = { issued: now, txid: await horizonOf(db), position: 0 };
    const rows = await selectRows(
      db,
      `SELECT position, entity_type, entity_id, bundle, uuid, deleted, changed, txid::text AS txid FROM ${TABLE} WHERE txid < ?::xid8 AND (txid, position) > (?::xid8, ?) AND entity_type || ' ' || bundle = ANY(?::text[]) ORDER BY txid, position LIMIT ?`,
      [horizon.txid, cursor.txid, cursor.position, textArray(kinds), limit + 1],
    );
    return { horizon, rows };
  },

  ahead: (cursor, horizon) => BigInt(cursor.txid) > BigInt(horizon.txid),

  fillSql: (table) =>
    `INSERT INTO ${TABLE} (entity_type, entity_id, bundle, uuid, deleted, changed, txid) ` +
    `SELECT CAST(? AS TEXT), id, bundle, uuid, ?, ?, pg_current_xact_id() FROM "${table}" e ` +
    `WHERE NOT EXISTS (SELECT 1 FROM ${TABLE} f WHERE f.entity_type = ? AND f.entity_id = e.id) ORDER BY id`,
};
