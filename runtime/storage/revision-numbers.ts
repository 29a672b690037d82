/**
 * How each database hands out revision numbers (storage/revisions.ts says what they number). They
 * count per entity type, as Drupal's do (each entity type has its own revision table and serial),
 * so the first asset, the first log and the first quantity each have revision 1. What matters is
 * that a number is never given twice within a type, and that a record's later save gets a larger
 * number than its earlier one (its revisions are listed in that order); not that the numbers have
 * no gaps.
 *
 * - PostgreSQL: a sequence per entity type (`entity_revision_<type>_seq`, made by
 *   core-migrations/0015_revision_sequences.ts). `nextval` takes no lock that lasts: two saves of
 *   logs never wait for each other here. A number taken by a save that then fails is not given
 *   back, so numbers may have gaps, as Drupal's serial columns do on PostgreSQL. It replaced a
 *   counter row per type (the SQLite way, below), which every save of a type locked until its
 *   commit, so the saves of one type took turns from the revision number to the COMMIT. Measured
 *   with scripts/revision-writers.ts (16 writers each POSTing then PATCHing logs for 10 s, on this
 *   2-core machine shared with other work): the figures are beside POSTGRES_NUMBERS below.
 * - SQLite: the counter row in `entity_revision_counter`, moved on by an upsert. SQLite runs one
 *   write transaction at a time (group commit's batch), so the row's lock costs nothing, and a
 *   rolled-back save leaves no gap.
 *
 * A new entity type that keeps revisions needs its sequence: a core migration that makes it (as
 * 0015 does for asset, log, quantity and taxonomy_term), or its saves fail on PostgreSQL.
 */
import type { Db } from './records.ts';
import { returningRows, selectRows } from './sql.ts';

export interface RevisionNumbers {
  /**
   * `count` (at least 1) new revision numbers of `entityType`, ascending, taken in one statement
   * within `db`'s transaction: not always consecutive (PostgreSQL's other saves take numbers
   * meanwhile), so a caller uses the list, never the first plus an offset.
   */
  take(db: Db, entityType: string, count: number): Promise<number[]>;
}

const COUNTER = 'entity_revision_counter';
/** `?` more numbers of a type (the counter's row made, or moved on and locked until commit); the last returned. */
const MOVE_COUNTER = `INSERT INTO ${COUNTER} (entity_type, last_id) VALUES (?, ?) ON CONFLICT (entity_type) DO UPDATE SET last_id = ${COUNTER}.last_id + excluded.last_id RETURNING last_id`;

export const SQLITE_NUMBERS: RevisionNumbers = {
  async take(db, entityType, count) {
    const [row] = await returningRows<{ last_id: number }>(db, MOVE_COUNTER, [entityType, count]);
    const last = Number(row!.last_id);
    return Array.from({ length: count }, (_, i) => last - count + 1 + i);
  },
};

/** The sequence that numbers the revisions of an entity type on PostgreSQL. */
export function revisionSequence(entityType: string): string {
  // Entity types are the definitions' names ([a-z_]+); anything else would be a bug, not input.
  if (!/^[a-z][a-z0-9_]*$/.test(entityType)) throw new Error(`Not an entity type's name: ${entityType}`);
  return `entity_revision_${entityType}_seq`;
}

/** One statement per type: the sequence's name is in its text, so it is parsed and prepared once. */
const takeSql = new Map<string, string>();

/**
 * Measured with scripts/revision-writers.ts on PostgreSQL (16 writers each POSTing then PATCHing
 * logs for 10 s; this 2-core machine shared with other work, load average 15-18, so saves/s are
 * bound by CPU and blurred; the sessions waiting on a lock are the steadier figure), two runs each:
 * - the counter row: 15.7 and 13.4 saves/s; on average 8.05 and 8.23 of ~9.7 active sessions
 *   waiting on a lock (transactionid: the type's counter row, held until the saver's commit);
 * - a sequence per type: 29.3 and 32.7 saves/s; 0.00 sessions waiting on a lock.
 */
export const POSTGRES_NUMBERS: RevisionNumbers = {
  async take(db, entityType, count) {
    let sql = takeSql.get(entityType);
    if (!sql) {
      // ORDER BY: the numbers ascending whatever order the rows come in.
      sql = `SELECT n FROM (SELECT nextval('${revisionSequence(entityType)}') AS n FROM generate_series(1, ?::integer)) AS taken ORDER BY n`;
      takeSql.set(entityType, sql);
    }
    const rows = await selectRows<{ n: number | string }>(db, sql, [count]);
    return rows.map((r) => Number(r.n));
  },
};
