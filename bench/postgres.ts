/**
 * The PostgreSQL leg of the benchmark (P1, P3, P4 on PostgreSQL against the `pg` rendered
 * baseline): a fresh database made for the run and dropped after it, its schema made by Tilth's
 * own migrations (`serve --migrate`, then stopped), and the farm copied in from the seeded SQLite
 * farm, so both databases hold the same rows. Rows go in as JSON batches through
 * json_populate_recordset, which types each column as the table declares it.
 */
import Database from 'better-sqlite3';
import pg from 'pg';

/** The tables the dataset fills, parents first. Users, oauth and state rows Tilth makes itself. */
const TABLES = [
  'users',
  'user_role',
  'taxonomy_term',
  'asset',
  'asset__plant_type',
  'asset__parent',
  'quantity',
  'log',
  'log__asset',
  'log__location',
  'log__quantity',
  'log__owner',
];
const WITH_ID = new Set(['users', 'taxonomy_term', 'asset', 'quantity', 'log']);

export function databaseUrl(server: string, name: string): string {
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Run one statement on the server's maintenance database (CREATE / DROP DATABASE). */
export async function admin(server: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl(server, 'postgres') });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Copy the farm's rows from `sqliteFile` into the migrated PostgreSQL database at `url`. */
export async function copyFarm(sqliteFile: string, url: string): Promise<void> {
  const lite = new Database(sqliteFile, { readonly: true });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const table of TABLES) {
      // User 1 is the admin Tilth made on this database at its first start.
      const where = table === 'users' ? ' WHERE id > 1' : table === 'user_role' ? ' WHERE user_id > 1' : '';
      const booleans = (
        await client.query(
          `SELECT column_name FROM information_schema.columns WHERE table_name = $1 AND data_type = 'boolean'`,
          [table],
        )
      ).rows.map((r: { column_name: string }) => r.column_name);
      let batch: unknown[] = [];
      const flush = async () => {
        if (!batch.length) return;
        await client.query(`INSERT INTO "${table}" SELECT * FROM json_populate_recordset(NULL::"${table}", $1::json)`, [
          JSON.stringify(batch),
        ]);
        batch = [];
      };
      for (const row of lite.prepare(`SELECT * FROM "${table}"${where}`).iterate() as Iterable<
        Record<string, unknown>
      >) {
        // SQLite keeps booleans as 1/0; PostgreSQL's JSON → boolean wants true/false.
        for (const k of booleans) if (typeof row[k] === 'number') row[k] = row[k] === 1;
        batch.push(row);
        if (batch.length === 5000) await flush();
      }
      await flush();
      if (WITH_ID.has(table))
        await client.query(
          `SELECT setval(pg_get_serial_sequence('"${table}"', 'id'), (SELECT max(id) FROM "${table}"))`,
        );
    }
    // The change feed is not copied (its positions are PostgreSQL's own, by transaction id): Tilth's
    // next start fills it from the copied records, as it fills an upgraded farm's. Without it the
    // PostgreSQL farm's records carried no version and P3 answered without an ETag there.
    await client.query(`INSERT INTO tilth_pending_work (name) VALUES ('change_feed') ON CONFLICT DO NOTHING`);
    await client.query('COMMIT');
    // Planner statistics for the loaded rows, as autovacuum would gather them on a production
    // server. Without them every statement is planned on default guesses (on farm-S, a hash join
    // over the whole asset table), and where autovacuum is off (this machine's PostgreSQL) they
    // would never come.
    await client.query('ANALYZE');
  } finally {
    await client.end();
    lite.close();
  }
}
