/**
 * The bearer check every baseline does, as Tilth does it per request: the SHA-256 of the token
 * looked up in oauth_access_tokens (with its client), then the user read so a blocked user is
 * refused at once. Prepared once; a statement per request, as the floor for that work.
 */
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';

const statements = new WeakMap<Database.Database, Database.Statement>();

export function checkBearer(db: Database.Database, header: string | undefined): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  let stmt = statements.get(db);
  if (!stmt) {
    stmt = db.prepare(`SELECT t.expires, t.revoked, u.status FROM oauth_access_tokens t
      JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id WHERE t.token_hash = ?`);
    statements.set(db, stmt);
  }
  const hash = createHash('sha256').update(header.slice(7), 'utf8').digest('hex');
  const row = stmt.get(hash) as { expires: number; revoked: number | null; status: number } | undefined;
  return !!row && row.revoked === null && row.expires > Date.now() / 1000 && !!row.status;
}
