/**
 * What the rendered baseline reads for a log document, shared by its SQLite and PostgreSQL stores:
 * the columns of the log with its two user references, P1's filter and order, and every
 * multi-valued field of a set of logs in one UNION ALL statement.
 */
// The SQL both stores run (named parameters; pg-store.ts rewrites them to $n).
export const COLUMNS = `l.id, l.uuid, l.bundle, l.revision_id, l.revision_created, l.revision_log_message, l.name, l.timestamp, l.status,
  l.created, l.changed, l.data, l.notes__value, l.notes__format, l.geometry__value, l.geometry__geo_type, l.geometry__lat,
  l.geometry__lon, l.geometry__left, l.geometry__top, l.geometry__right, l.geometry__bottom, l.geometry__geohash,
  l.geometry__latlon, l.is_movement, l.is_group_assignment,
  l.revision_user, ru.uuid AS revision_user_uuid, l.uid, u.uuid AS uid_uuid`;
export const FROM = `FROM log l LEFT JOIN users ru ON ru.id = l.revision_user LEFT JOIN users u ON u.id = l.uid`;
export const WHERE = `WHERE l.bundle = 'activity' AND l.status = @status AND l.timestamp BETWEEN @from AND @to`;
export const ORDER = `ORDER BY l.timestamp DESC, l.id DESC LIMIT @limit`;
// Every multi-valued field of a log for a set of logs (the CTE named ids), in one statement.
export const SIDE_TABLES = `
  SELECT 'asset' AS f, x.entity_id, x.delta, t.uuid, t.bundle, t.id AS tid FROM log__asset x JOIN asset t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'location', x.entity_id, x.delta, t.uuid, t.bundle, t.id FROM log__location x JOIN asset t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'equipment', x.entity_id, x.delta, t.uuid, t.bundle, t.id FROM log__equipment x JOIN asset t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'group', x.entity_id, x.delta, t.uuid, t.bundle, t.id FROM log__group x JOIN asset t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'quantity', x.entity_id, x.delta, t.uuid, t.bundle, t.id FROM log__quantity x JOIN quantity t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'category', x.entity_id, x.delta, t.uuid, t.bundle, t.id FROM log__category x JOIN taxonomy_term t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'owner', x.entity_id, x.delta, t.uuid, 'user', t.id FROM log__owner x JOIN users t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'file', x.entity_id, x.delta, t.uuid, 'file', t.id FROM log__file x JOIN files t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'image', x.entity_id, x.delta, t.uuid, 'file', t.id FROM log__image x JOIN files t ON t.id = x.target_id WHERE x.entity_id IN (SELECT id FROM ids)
  UNION ALL SELECT 'flag', x.entity_id, x.delta, x.value, NULL, NULL FROM log__flag x WHERE x.entity_id IN (SELECT id FROM ids)
  ORDER BY 2, 1, 3`;

export type Row = Record<string, unknown> & { id: number; uuid: string; bundle: string };
export interface SideRow {
  f: string;
  entity_id: number;
  uuid: string;
  bundle: string | null;
  tid: number | null;
}
export type PageParams = {
  status: string;
  from: number;
  to: number;
  limit: number;
  offset?: number;
  ts?: unknown;
  id?: number;
};
/** Where the rows come from; the document is built the same way whatever the database. */
export interface Store {
  token(header: string | undefined): boolean | Promise<boolean>;
  firstPage(p: PageParams): Row[] | Promise<Row[]>;
  afterCursor(p: PageParams): Row[] | Promise<Row[]>;
  byUuid(uuid: string): Row | undefined | Promise<Row | undefined>;
  /** A log's version, for its ETag (Tilth's answer about one record carries one: issue 25). */
  version(id: number): number | undefined | Promise<number | undefined>;
  side(ids: number[]): SideRow[] | Promise<SideRow[]>;
}
