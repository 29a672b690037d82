/**
 * ETags and conditional requests for one resource (issue 25 item 5). A record's version is its
 * place in the change feed (storage/change-feed.ts): every save, and every cascade that changes
 * what the record shows (a computed location), gives it a new, higher one.
 *
 * - Every answer about one resource (GET, the 201 of a POST, the 200 of a PATCH) carries
 *   `ETag: "<version>"`; a GET with `include` or sparse fieldsets, `"<version>-<hash of query>"`,
 *   since its body differs. A relationship route carries its record's (handlers/relationships.ts,
 *   whose writes honour If-Match too), a to-one related route its target's, an uploaded file's
 *   201 the file's (handlers/files.ts).
 * - `If-Match` on PATCH and DELETE: the write goes ahead only if the record's version is still the
 *   one named, checked with the record's row and feed row locked (PostgreSQL, so two writes with
 *   the same ETag cannot both pass; SQLite has one writer), else 412 `precondition_failed`.
 *   Without it, the last write wins, as farmOS.js, farmOS.py and Field Kit expect.
 * - `If-None-Match` on GET: 304 when the tag of this representation is unchanged, compared weakly
 *   (never with `include`, as included records change on their own).
 */
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Db } from '../../storage/records.ts';
import { versionOf } from '../../storage/change-feed.ts';
import type { IfMatch } from '../../usecases/if-match.ts';

/** The ETag of a record at `version`, for this request's representation. */
export function entityTag(version: number, req: Request): string {
  const i = req.originalUrl.indexOf('?');
  const query = i < 0 ? '' : req.originalUrl.slice(i + 1);
  if (!/(^|&)(include|fields(%5B|\[))/i.test(query)) return `"${version}"`;
  return `"${version}-${createHash('sha1').update(query).digest('base64url').slice(0, 10)}"`;
}

/** The versions named by an If-Match or If-None-Match header; `*` for any; weak tags never match. */
function namedVersions(header: string): Set<number> | '*' {
  if (header.trim() === '*') return '*';
  const out = new Set<number>();
  for (const part of header.split(',')) {
    const match = /^\s*"(\d{1,15})(?:-[A-Za-z0-9_-]*)?"\s*$/.exec(part);
    if (match) out.add(Number(match[1]));
  }
  return out;
}

/** Set the record's ETag on the answer; its version, or null for a record the feed does not know. */
export async function setEntityTag(
  db: Db,
  res: Response,
  req: Request,
  entityType: string,
  id: number,
): Promise<number | null> {
  const version = await versionOf(db, entityType, id);
  if (version !== null) res.setHeader('ETag', entityTag(version, req));
  return version;
}

/**
 * True (and the 304 sent) when a GET's If-None-Match names this representation as it is now: its
 * tag exactly (a sparse fieldset's differs from the whole record's), compared weakly as RFC 9110
 * §13.1.2 says for GET, so the `W/` a compressing proxy adds still matches.
 */
export function sentNotModified(req: Request, res: Response, version: number | null): boolean {
  const header = req.get('If-None-Match');
  if (!header || version === null || /(^|&)include=/i.test(req.originalUrl.split('?')[1] ?? '')) return false;
  const current = entityTag(version, req);
  const named = header.trim() === '*' || header.split(',').some((part) => part.trim().replace(/^W\//, '') === current);
  if (!named) return false;
  res.status(304).end();
  return true;
}

/**
 * What a write's If-Match header names, for the commands (usecases/if-match.ts), which compare it
 * with the record's version, its rows locked, after the access checks: undefined when there is
 * none (the last write wins, as farmOS.js, farmOS.py and Field Kit expect).
 */
export function ifMatchOf(req: Request): IfMatch | undefined {
  const header = req.get('If-Match');
  return header === undefined ? undefined : namedVersions(header);
}
