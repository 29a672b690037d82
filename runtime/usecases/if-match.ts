/**
 * A write's precondition on the record's version (issue 25 item 5): the face reads it from its
 * wire (JSON:API: the `If-Match` header, handlers/etags.ts) and the commands compare it with the
 * record's version, its feed row locked, so two writes naming the same version cannot both pass.
 */
import type { Db, EntityRecord } from '../storage/records.ts';
import { versionOf } from '../storage/change-feed.ts';
import { ApiError } from '../errors.ts';

/** Any version (`*`), or the versions named; a write without one goes ahead whatever the version. */
export type IfMatch = '*' | ReadonlySet<number>;

/** The record changed since the version the write named: 412, with the record's version now. */
export class StaleVersionError extends ApiError {
  constructor(readonly current: number | null) {
    super(
      412,
      `The resource changed since the ETag sent in If-Match (it is now ${current === null ? 'unknown' : `"${current}"`}): GET it again, apply your change to it, and send that with its new ETag.`,
      {
        code: 'precondition_failed',
        headers: current === null ? {} : { ETag: `"${current}"` },
      },
    );
    this.name = 'StaleVersionError';
  }
}

/**
 * The error for a write whose `ifMatch` no longer names the record's version, or null. Called
 * with the record the write found and locked (RecordCommands.findForUpdate: its row, on
 * PostgreSQL); this locks the record's feed row until the transaction ends and compares. The
 * record's row first, then its feed row: the order every save takes them in (it updates the
 * record, then its feed row), so that this cannot deadlock with a save without `ifMatch`. The
 * caller throws the answer only after its access checks, so that a caller who may not write the
 * record gets the 403 it always got, not the record's version.
 */
export async function staleVersion(
  db: Db,
  record: EntityRecord,
  ifMatch: IfMatch | undefined,
): Promise<StaleVersionError | null> {
  if (ifMatch === undefined) return null;
  const version = await versionOf(db, record.rt.entityType.entityType, record.id, { lock: true });
  if (ifMatch === '*' || (version !== null && ifMatch.has(version))) return null;
  return new StaleVersionError(version);
}
