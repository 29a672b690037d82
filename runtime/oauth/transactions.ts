/**
 * oauth2orize's transaction store, in the database: an authorization request waiting for the
 * user's decision on the consent page. A transaction belongs to the session that saw the page,
 * lives ten minutes, and is claimed (deleted) by the decision that loads it, so that it can be
 * answered once only, whichever server process receives the answer.
 *
 * A sign-in keeps at most MAX_PENDING requests waiting: opening another drops its oldest, as a
 * browser with many tabs open on the consent page would expect (the oldest tab's answer is then
 * refused as expired). Every new request deletes the expired ones of every sign-in, so the table
 * holds no more than what the route's rate limit lets in during one lifetime.
 */
import type { Request } from 'express';
import type { Knex } from 'knex';
import { OAuthError } from '../errors.ts';
import { findClientByRowId, type Client } from './clients.ts';
import { hashSecret, newSecret } from './secrets.ts';
import { sessionOf } from './session.ts';
import { lockToChangeWhere } from '../storage/locks.ts';
import type { AuthorizeRequest } from './authorize-request.ts';
import { write } from '../storage/transactions.ts';

/** How long the consent page may stay open before its answer is refused. */
const TRANSACTION_LIFETIME = 600;

/** Most requests one sign-in keeps waiting for a decision. */
export const MAX_PENDING = 20;

interface Transaction {
  transactionID?: string;
  client: Client;
  redirectURI: string;
  req: AuthorizeRequest;
  user?: unknown;
}

type Callback<T> = (err: Error | null, value?: T) => void;

const expired = () =>
  new OAuthError(
    'invalid_request',
    'This authorization request expired, was already answered, or was started in another sign-in. Start again from the application.',
  );

/** The store interface oauth2orize uses when `legacy` is not set: store, load, update, remove. */
export class DatabaseTransactionStore {
  constructor(private readonly db: Knex) {}

  store(req: Request, txn: Transaction, cb: Callback<string>): void {
    const session = sessionOf(req);
    if (!session) return cb(new Error('An authorization transaction needs a signed-in session.'));
    const tid = newSecret();
    this.insert(tid, session.hash, txn).then(() => cb(null, tid), cb);
  }

  private async insert(tid: string, sessionHash: string, txn: Transaction): Promise<void> {
    const t = Math.floor(Date.now() / 1000);
    // Expired requests of every sign-in go first, on their own: a failure there (two sweeps
    // deadlocking on PostgreSQL) must not fail this request, and the next one sweeps again.
    await this.db('oauth_authorize_requests')
      .where('expires', '<=', t)
      .delete()
      .catch(() => undefined);
    await write(this.db, async (trx) => {
      // On PostgreSQL two requests of one sign-in at once would each count the other out: the
      // session's row is locked until the end (SQLite runs one write transaction at a time). FOR NO
      // KEY UPDATE (storage/locks.ts): it keeps a second request of the session out as FOR UPDATE
      // did, without also waiting on the KEY SHARE locks the requests' rows naming the session take.
      await lockToChangeWhere(trx, 'oauth_sessions', 'session_hash', sessionHash);
      // Make room for this one: the newest MAX_PENDING - 1 stay.
      const older = await trx('oauth_authorize_requests')
        .where('session_hash', sessionHash)
        .orderBy([
          { column: 'created', order: 'desc' },
          { column: 'expires', order: 'desc' },
        ])
        .offset(MAX_PENDING - 1)
        .limit(1_000_000)
        .pluck('transaction_hash');
      if (older.length) await trx('oauth_authorize_requests').whereIn('transaction_hash', older).delete();
      await trx('oauth_authorize_requests').insert({
        transaction_hash: hashSecret(tid),
        session_hash: sessionHash,
        client_id: txn.client.id,
        redirect_uri: txn.redirectURI,
        request: JSON.stringify(txn.req),
        created: t,
        expires: t + TRANSACTION_LIFETIME,
      });
    });
  }

  load(req: Request, cb: Callback<Transaction>): void {
    const tid = (req.body as Record<string, string> | undefined)?.transaction_id;
    const session = sessionOf(req);
    if (!tid || !session) return cb(expired());
    this.claim(tid, session.hash).then(
      (txn) => (txn ? cb(null, { ...txn, transactionID: tid, user: session.user }) : cb(expired())),
      cb,
    );
  }

  private async claim(tid: string, sessionHash: string): Promise<Omit<Transaction, 'transactionID'> | null> {
    const hash = hashSecret(tid);
    const row = await this.db('oauth_authorize_requests')
      .where({ transaction_hash: hash, session_hash: sessionHash })
      .where('expires', '>', Math.floor(Date.now() / 1000))
      .first();
    if (!row) return null;
    // Only the request that deletes the row may answer it.
    const claimed = await this.db('oauth_authorize_requests').where('transaction_hash', hash).delete();
    if (claimed !== 1) return null;
    const client = await findClientByRowId(this.db, row.client_id);
    if (!client) return null;
    return { client, redirectURI: row.redirect_uri, req: JSON.parse(row.request) as AuthorizeRequest };
  }

  update(_req: Request, tid: string, txn: Transaction, cb: Callback<string>): void {
    this.db('oauth_authorize_requests')
      .where('transaction_hash', hashSecret(tid))
      .update({ redirect_uri: txn.redirectURI, request: JSON.stringify(txn.req) })
      .then(() => cb(null, tid), cb);
  }

  remove(_req: Request, tid: string, cb: Callback<void>): void {
    this.db('oauth_authorize_requests')
      .where('transaction_hash', hashSecret(tid))
      .delete()
      .then(() => cb(null), cb);
  }
}
