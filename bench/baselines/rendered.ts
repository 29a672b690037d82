/**
 * The *rendered* baseline: bare node:http + better-sqlite3 on the same database file as Tilth,
 * answering the benchmark's log reads (P1's page of activity logs, P2's with include=asset,quantity
 * (included.ts), P9's deeper pages through the same cursor, P3's one log by UUID) with prepared SQL
 * and a JSON:API document built by hand.
 * The benchmark checks that its bytes are identical to Tilth's, so the ratio Tilth / rendered is
 * the price of everything Tilth does beyond reading the rows and writing the document.
 *
 * It does the same work a request needs, no less: the bearer token is looked up by its SHA-256 in
 * oauth_access_tokens and its user read (as Tilth does on every request), the page is read with the
 * same keyset as links.next, and every relationship side table is read for the page's logs.
 * It knows only what the benchmark asks: log--activity, sort=-timestamp, filter[status] and a
 * BETWEEN range on timestamp. Anything else is a 404, so a mismatch shows up as a failed check.
 *
 * It answers with Tilth's headers (headers.ts), recorded from Tilth's answer to P1.
 *
 * Env: PORT, DB (the SQLite file) or DATABASE_URL (PostgreSQL), BASE_URL (Tilth's, for the links), FINGERPRINT (the `h` Tilth
 * puts in its cursors: a constant of the query, sha1 of its parsed filter and sort), HEADERS (a JSON
 * file: the headers as [name, value] pairs).
 */
import { createServer, type ServerResponse } from 'node:http';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { answerWith, type HeaderList } from './headers.ts';
import { sqliteIncluder, type Includer } from './included.ts';
import { checkBearer } from './token.ts';
import { JSONAPI, logRenderer, type Ref } from './log-document.ts';
import { COLUMNS, FROM, ORDER, SIDE_TABLES, WHERE, type Row, type SideRow, type Store } from './log-sql.ts';

const BASE = process.env.BASE_URL!;
const FINGERPRINT = process.env.FINGERPRINT ?? '';

// On PostgreSQL (DATABASE_URL) the same SQL runs through `pg` (pg-store.ts); else better-sqlite3.
const sqlite = process.env.DATABASE_URL ? null : new Database(process.env.DB!, { readonly: true, fileMustExist: true });
const store: Store = sqlite
  ? sqliteStore(sqlite)
  : await (await import('./pg-store.ts')).pgStore(process.env.DATABASE_URL!);
const includer: Includer | null = sqlite ? sqliteIncluder(sqlite, BASE) : null;

const { renderRows } = logRenderer(BASE, store);

/** `included` for include=asset,quantity: each path's targets in the order the page names them, each once. */
function included(refs: Array<Map<string, Ref[]>>): string {
  const targets = (field: string) => [...new Set(refs.flatMap((m) => (m.get(field) ?? []).map((r) => r.tid!)))];
  return `,"included":[${includer!.render(targets('asset'), targets('quantity')).join(',')}]`;
}

/** Tilth writes pager links with raw brackets and everything else percent-encoded. */
const encodeKey = (k: string) =>
  k
    .split(/([[\]])/)
    .map((p) => (p === '[' || p === ']' ? p : encodeURIComponent(p)))
    .join('');

async function page(url: URL, rawSearch: string): Promise<string | null> {
  const q = url.searchParams;
  if (q.get('sort') !== '-timestamp') return null;
  const include = q.get('include');
  // Includes are built on SQLite only (P2 is not part of the PostgreSQL leg).
  if (include !== null && (include !== 'asset,quantity' || !includer)) return null;
  const status = q.get('filter[status]');
  const from = Number(q.get('filter[ts][condition][value][0]'));
  const to = Number(q.get('filter[ts][condition][value][1]'));
  if (
    status === null ||
    q.get('filter[ts][condition][operator]') !== 'BETWEEN' ||
    q.get('filter[ts][condition][path]') !== 'timestamp'
  )
    return null;
  const limit = Math.min(50, Number(q.get('page[limit]') ?? 50));
  const offset = Number(q.get('page[offset]') ?? 0);
  let rows: Row[];
  const cursorText = q.get('page[cursor]');
  const cursor = cursorText
    ? (JSON.parse(Buffer.from(cursorText, 'base64url').toString()) as {
        o: number;
        h: string;
        v: [number | null, number];
      })
    : null;
  if (cursor && cursor.o === offset && cursor.h === FINGERPRINT && cursor.v.length === 2) {
    rows = await store.afterCursor({ status, from, to, limit: limit + 1, ts: cursor.v[0], id: cursor.v[1] });
  } else rows = await store.firstPage({ status, from, to, limit: limit + 1, offset });
  const more = rows.length > limit;
  if (more) rows.pop();
  // Pager links as Tilth writes them: every other parameter kept, then page[offset], page[limit]
  // (and the keyset cursor on next); first and prev once past the first page.
  const kept = [...q]
    .filter(([k]) => !k.startsWith('page['))
    .map(([k, v]) => `${encodeKey(k)}=${encodeURIComponent(v)}`)
    .join('&');
  const pageLink = (o: number, cursor?: string) =>
    `{"href":"${BASE}${url.pathname}?${kept}&page[offset]=${o}&page[limit]=${limit}${cursor ? `&page[cursor]=${cursor}` : ''}"}`;
  let links = `"links":{"self":{"href":"${BASE}${url.pathname}${rawSearch}"}`;
  if (more) {
    const last = rows[rows.length - 1]!;
    links += `,"next":${pageLink(offset + limit, Buffer.from(JSON.stringify({ o: offset + limit, h: FINGERPRINT, v: [last.timestamp, last.id] })).toString('base64url'))}`;
  }
  if (offset > 0) links += `,"first":${pageLink(0)},"prev":${pageLink(Math.max(0, offset - limit))}`;
  const { rendered, refs } = await renderRows(rows);
  return `${JSONAPI},"data":[${rendered.join(',')}]${include ? included(refs) : ''},${links}}}`;
}

/** One log, and its ETag: its version in the change feed, looked up as Tilth looks it up. */
async function one(uuid: string, url: URL): Promise<{ body: string; etag?: string } | null> {
  const row = await store.byUuid(uuid);
  if (!row) return null;
  const version = await store.version(row.id);
  return {
    body: `${JSONAPI},"data":${(await renderRows([row])).rendered[0]},"links":{"self":{"href":"${BASE}${url.pathname}"}}}`,
    etag: version === undefined ? undefined : `"${version}"`,
  };
}

const recorded = JSON.parse(readFileSync(process.env.HEADERS!, 'utf8')) as HeaderList;
const answer200 = answerWith(recorded);

function send(res: ServerResponse, status: number, body: string, etag?: string): void {
  if (status === 200 && etag) return answerWith([...recorded, ['etag', etag]])(res, status, body);
  if (status === 200) return answer200(res, status, body);
  res.writeHead(status, {
    'Content-Type': 'application/vnd.api+json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

createServer((req, res) => {
  const raw = req.url ?? '/';
  if (raw === '/ready') return send(res, 200, '{}');
  answer(raw, req.headers.authorization).then(
    ([status, body, etag]) => send(res, status, body, etag),
    (error: Error) => send(res, 500, JSON.stringify({ errors: [{ status: '500', detail: error.message }] })),
  );
}).listen(Number(process.env.PORT), '127.0.0.1');

async function answer(raw: string, authorization: string | undefined): Promise<[number, string, string?]> {
  if (!(await store.token(authorization))) return [401, '{"errors":[{"status":"401"}]}'];
  const url = new URL(raw, 'http://x');
  const q = raw.indexOf('?');
  let body: string | null = null;
  let etag: string | undefined;
  if (url.pathname === '/api/log/activity') body = await page(url, q < 0 ? '' : raw.slice(q));
  else if (url.pathname.startsWith('/api/log/activity/')) {
    const found = await one(url.pathname.slice('/api/log/activity/'.length), url);
    body = found?.body ?? null;
    etag = found?.etag;
  }
  return body === null ? [404, '{"errors":[{"status":"404"}]}'] : [200, body, etag];
}

/** The SQLite store: prepared better-sqlite3 statements, synchronous as the driver is. */
function sqliteStore(db: Database.Database): Store {
  const firstPage = db.prepare(`SELECT ${COLUMNS} ${FROM} ${WHERE} ${ORDER} OFFSET @offset`);
  // After the cursor's last row: timestamp DESC puts NULLs last in SQLite, so they come after any value.
  const afterCursor = db.prepare(`SELECT ${COLUMNS} ${FROM} ${WHERE}
    AND ((l.timestamp < @ts OR l.timestamp IS NULL) OR (l.timestamp = @ts AND l.id < @id)) ${ORDER}`);
  const byUuid = db.prepare(`SELECT ${COLUMNS} ${FROM} WHERE l.uuid = ? AND l.bundle = 'activity'`);
  const version = db.prepare(`SELECT position FROM change_feed WHERE entity_type = 'log' AND entity_id = ?`).pluck();
  const sideTables = db.prepare(`WITH ids(id) AS (SELECT value FROM json_each(?)) ${SIDE_TABLES}`);
  return {
    token: (header) => checkBearer(db, header),
    firstPage: (p) => firstPage.all(p) as Row[],
    afterCursor: (p) => afterCursor.all(p) as Row[],
    byUuid: (uuid) => byUuid.get(uuid) as Row | undefined,
    version: (id) => version.get(id) as number | undefined,
    side: (ids) => sideTables.all(JSON.stringify(ids)) as SideRow[],
  };
}
