/**
 * The rendered baseline's rows from PostgreSQL through `pg`, with the same SQL as on SQLite
 * (named parameters become $n; the ids of a page come as an int[] instead of a JSON array).
 * Named prepared statements, as a server built for speed would keep them, on a small pool.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { COLUMNS, FROM, ORDER, SIDE_TABLES, WHERE, type Row, type SideRow, type Store } from './log-sql.ts';

// int8 (bigint) columns as numbers, as Tilth reads them: the timestamps fit in a double.
pg.types.setTypeParser(20, (v) => Number(v));

/** `@name` parameters to `$n`, and the order to pass the values in. */
function positional(sql: string): { text: string; names: string[] } {
  const names: string[] = [];
  const text = sql.replace(/@(\w+)/g, (_, name: string) => {
    let i = names.indexOf(name);
    if (i < 0) i = names.push(name) - 1;
    return `$${i + 1}`;
  });
  return { text, names };
}

export async function pgStore(url: string): Promise<Store> {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  const statement = (name: string, sql: string) => {
    const { text, names } = positional(sql);
    return async (params: Record<string, unknown>) =>
      (await pool.query({ name, text, values: names.map((n) => params[n]) })).rows;
  };
  const firstPage = statement('first_page', `SELECT ${COLUMNS} ${FROM} ${WHERE} ${ORDER} OFFSET @offset`);
  // PostgreSQL puts NULLs first in a DESC order, so after a row with a value come only smaller values.
  const afterCursor = statement(
    'after_cursor',
    `SELECT ${COLUMNS} ${FROM} ${WHERE}
    AND (l.timestamp < @ts OR (l.timestamp = @ts AND l.id < @id)) ${ORDER}`,
  );
  const byUuid = statement('by_uuid', `SELECT ${COLUMNS} ${FROM} WHERE l.uuid = @uuid AND l.bundle = 'activity'`);
  const version = statement(
    'version',
    `SELECT position FROM change_feed WHERE entity_type = 'log' AND entity_id = @id`,
  );
  const side = statement('side_tables', `WITH ids(id) AS (SELECT unnest(@ids::int[])) ${SIDE_TABLES}`);
  const token = statement(
    'token',
    `SELECT t.expires, t.revoked, u.status FROM oauth_access_tokens t
    JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id WHERE t.token_hash = @hash`,
  );
  return {
    async token(header) {
      if (!header?.startsWith('Bearer ')) return false;
      const hash = createHash('sha256').update(header.slice(7), 'utf8').digest('hex');
      const row = (await token({ hash }))[0] as
        { expires: number; revoked: number | null; status: boolean } | undefined;
      return !!row && row.revoked === null && row.expires > Date.now() / 1000 && !!row.status;
    },
    firstPage: async (p) => (await firstPage(p)) as Row[],
    afterCursor: async (p) => (await afterCursor(p)) as Row[],
    byUuid: async (uuid) => (await byUuid({ uuid }))[0] as Row | undefined,
    version: async (id) => {
      const row = (await version({ id }))[0] as { position: string } | undefined;
      return row ? Number(row.position) : undefined;
    },
    side: async (ids) => (await side({ ids })) as SideRow[],
  };
}
