/**
 * The *static* baseline, the ceiling: bare node:http sending a response it holds in memory, the
 * same body and headers Tilth answered (headers.ts). With TOKEN_CHECK=1 it first does the same
 * bearer check as Tilth (a SHA-256 lookup in oauth_access_tokens, on the same database file): that
 * is P0's baseline, a bare server answering GET /api with the same bytes and the same token check.
 *
 * Env: PORT, BODIES (a JSON file: {"<path and query>": {"file": "<file with the body>", "headers":
 * [[name, value], …]}}), DB, TOKEN_CHECK.
 */
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { checkBearer } from './token.ts';
import { answerWith, type HeaderList } from './headers.ts';

type Answer = (res: import('node:http').ServerResponse) => void;
const answers = new Map<string, Answer>();
for (const [path, kept] of Object.entries(
  JSON.parse(readFileSync(process.env.BODIES!, 'utf8')) as Record<string, { file: string; headers: HeaderList }>,
)) {
  const body = readFileSync(kept.file);
  const answer = answerWith(kept.headers);
  answers.set(path, (res) => answer(res, 200, body));
}
const db =
  process.env.TOKEN_CHECK === '1' ? new Database(process.env.DB!, { readonly: true, fileMustExist: true }) : null;

createServer((req, res) => {
  if (req.url === '/ready') return res.end('{}');
  if (db && !checkBearer(db, req.headers.authorization)) {
    res.writeHead(401);
    return res.end();
  }
  const answer = answers.get(req.url ?? '');
  if (!answer) {
    res.writeHead(404);
    return res.end();
  }
  answer(res);
}).listen(Number(process.env.PORT), '127.0.0.1');
