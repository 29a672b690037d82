/**
 * The *write* baseline's check (baselines/write.ts): the same POST and the same PATCH sent to
 * Tilth and to the baseline must answer with the same document and headers, and write the same
 * rows, but for what each write makes afresh (the new log's id and UUID, the revision number, the
 * time, the feed position). A baseline that wrote less would flatter Tilth's ratio.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { headerDifferences } from './baselines/headers.ts';
import { firstDifference } from './workloads.ts';

type All = (sql: string, params: unknown[]) => Promise<Array<Record<string, unknown>>>;

/** Read access to the database both write to. */
export async function reader(file: string | null, url: string | null): Promise<{ all: All; close(): Promise<void> }> {
  if (url) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const positional = (sql: string) => {
      let n = 0;
      return sql.replace(/\?/g, () => `$${++n}`);
    };
    return {
      all: async (sql, params) => (await client.query(positional(sql), params)).rows,
      close: () => client.end(),
    };
  }
  const db = new Database(file!, { readonly: true });
  return {
    all: async (sql, params) => db.prepare(sql).all(...params) as Array<Record<string, unknown>>,
    close: async () => void db.close(),
  };
}

const SIDE = [
  'log__asset',
  'log__location',
  'log__owner',
  'log__quantity',
  'log__category',
  'log__equipment',
  'log__group',
  'log__flag',
];
const MADE = new Set([
  'id',
  'uuid',
  'revision_id',
  'revision_created',
  'created',
  'changed',
  'position',
  'entity_id',
  'txid',
]);

/** What a log's write left, without what each write makes afresh; times in snapshots as "now". */
async function rowsOf(all: All, id: number, since: { revision: number; position: number }): Promise<string> {
  const strip = (rows: Array<Record<string, unknown>>) =>
    rows.map((r) =>
      Object.fromEntries(
        Object.entries(r)
          .filter(([k]) => !MADE.has(k))
          .map(([k, v]) => [k, typeof v === 'boolean' ? Number(v) : typeof v === 'bigint' ? Number(v) : v]),
      ),
    );
  const out: Record<string, unknown> = { log: strip(await all(`SELECT * FROM log WHERE id = ?`, [id])) };
  for (const t of SIDE) out[t] = strip(await all(`SELECT * FROM ${t} WHERE entity_id = ? ORDER BY delta`, [id]));
  const revisions = await all(
    `SELECT * FROM entity_revision WHERE entity_type = 'log' AND entity_id = ? AND id > ? ORDER BY id`,
    [id, since.revision],
  );
  out.entity_revision = strip(revisions).map((r) => ({
    ...r,
    data: String(r.data).replace(/"(revision_created|created|changed)":\d+/g, '"$1":"T"'),
  }));
  out.change_feed = strip(
    await all(`SELECT * FROM change_feed WHERE entity_type = 'log' AND entity_id = ? AND position > ?`, [
      id,
      since.position,
    ]),
  );
  return JSON.stringify(out, null, 1);
}

/** The high-water marks before a write, so only its own revision and feed rows are compared. */
async function marks(all: All): Promise<{ revision: number; position: number }> {
  const r = (await all(`SELECT coalesce(max(id), 0) AS m FROM entity_revision`, []))[0]!;
  const p = (await all(`SELECT coalesce(max(position), 0) AS m FROM change_feed`, []))[0]!;
  return { revision: Number(r.m), position: Number(p.m) };
}

/** An answer's body with the write's own values put as placeholders. */
function normalise(body: string, uuid: string, id: number): string {
  return body
    .split(uuid)
    .join('UUID')
    .replace(`"drupal_internal__id":${id},`, '"drupal_internal__id":"ID",')
    .replace(/"drupal_internal__revision_id":\d+/, '"drupal_internal__revision_id":"R"')
    .replace(/"(revision_created|created|changed)":"[^"]*"/g, '"$1":"T"');
}

interface Sent {
  status: number;
  body: string;
  headers: Headers;
}
async function send(url: string, method: string, headers: Record<string, string>, body: string): Promise<Sent> {
  const res = await fetch(url, { method, headers, body });
  return { status: res.status, body: await res.text(), headers: res.headers };
}

/** The differences between Tilth's write and the baseline's, as text; empty when none. */
function compare(what: string, a: Sent, b: Sent, aBody: string, bBody: string, aRows: string, bRows: string): string[] {
  const out: string[] = [];
  if (a.status !== b.status) out.push(`${what}: status Tilth ${a.status}, baseline ${b.status}`);
  const at = firstDifference(Buffer.from(aBody), Buffer.from(bBody));
  if (at >= 0)
    out.push(
      `${what}: bytes DIFFER at ${at}: Tilth ${JSON.stringify(aBody.slice(Math.max(0, at - 60), at + 60))}, baseline ${JSON.stringify(bBody.slice(Math.max(0, at - 60), at + 60))}`,
    );
  const made = (h: Headers) => {
    const c = new Headers(h);
    for (const n of ['etag', 'location']) if (c.has(n)) c.set(n, 'made per write');
    return c;
  };
  const headers = headerDifferences(made(a.headers), made(b.headers));
  if (headers.length) out.push(`${what}: headers DIFFER: ${headers.join('; ')}`);
  const rt = firstDifference(Buffer.from(aRows), Buffer.from(bRows));
  if (rt >= 0)
    out.push(
      `${what}: rows DIFFER at ${rt}: Tilth ${JSON.stringify(aRows.slice(Math.max(0, rt - 80), rt + 80))}, baseline ${JSON.stringify(bRows.slice(Math.max(0, rt - 80), rt + 80))}`,
    );
  return out;
}

/**
 * POST `postBody` to both, then PATCH the log at `patchPath` through each in turn with the same
 * body; compare answers and rows. Returns the differences (empty: the baseline writes as Tilth).
 */
export async function checkWrites(
  db: { file: string | null; url: string | null },
  tilth: string,
  baseline: string,
  headers: Record<string, string>,
  postBody: string,
  patchPath: string,
  patchBody: string,
): Promise<string[]> {
  const { all, close } = await reader(db.file, db.url);
  try {
    const out: string[] = [];
    const posted = async (base: string) => {
      const before = await marks(all);
      const sent = await send(`${base}/api/log/activity`, 'POST', headers, postBody);
      if (sent.status !== 201) return { sent, body: sent.body, rows: '' };
      const doc = JSON.parse(sent.body) as { data: { id: string; attributes: { drupal_internal__id: number } } };
      return {
        sent,
        body: normalise(sent.body, doc.data.id, doc.data.attributes.drupal_internal__id),
        rows: await rowsOf(all, doc.data.attributes.drupal_internal__id, before),
      };
    };
    const a = await posted(tilth);
    const b = await posted(baseline);
    out.push(...compare('POST', a.sent, b.sent, a.body, b.body, a.rows, b.rows));
    const patched = async (base: string) => {
      const before = await marks(all);
      const sent = await send(`${base}${patchPath}`, 'PATCH', headers, patchBody);
      if (sent.status !== 200) return { sent, body: sent.body, rows: '' };
      const doc = JSON.parse(sent.body) as { data: { id: string; attributes: { drupal_internal__id: number } } };
      return {
        sent,
        body: normalise(sent.body, doc.data.id, doc.data.attributes.drupal_internal__id),
        rows: await rowsOf(all, doc.data.attributes.drupal_internal__id, before),
      };
    };
    const c = await patched(tilth);
    const d = await patched(baseline);
    out.push(...compare('PATCH', c.sent, d.sent, c.body, d.body, c.rows, d.rows));
    return out;
  } finally {
    await close();
  }
}
