/**
 * The *static* baseline, the ceiling: bare node:http sending bytes it holds in memory, the same
 * bytes Tilth answered. With TOKEN_CHECK=1 it first does the same bearer check as Tilth (a SHA-256
 * lookup in oauth_access_tokens, on the same database file): that is P0's baseline, a bare server
 * answering GET /api with the same bytes and the same token check.
 *
 * Env: PORT, BODIES (a JSON file: {"<path and query>": "<file with the bytes>"}), DB, TOKEN_CHECK.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { checkBearer } from './token.ts';

const bodies = new Map<string, Buffer>();
for (const [path, file] of Object.entries(JSON.parse(readFileSync(process.env.BODIES!, 'utf8')) as Record<string, string>)) {
  bodies.set(path, readFileSync(file));
}
const db = process.env.TOKEN_CHECK === '1' ? new Database(process.env.DB!, { readonly: true, fileMustExist: true }) : null;

createServer((req, res) => {
  if (req.url === '/ready') return res.end('{}');
  if (db && !checkBearer(db, req.headers.authorization)) {
    res.writeHead(401);
    return res.end();
  }
  const body = bodies.get(req.url ?? '');
  if (!body) {
    res.writeHead(404);
    return res.end();
  }
  res.writeHead(200, { 'Content-Type': 'application/vnd.api+json; charset=utf-8', 'Content-Length': body.length });
  res.end(body);
}).listen(Number(process.env.PORT), '127.0.0.1');
