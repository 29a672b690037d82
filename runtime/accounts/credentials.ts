/**
 * Ending everything a user holds: their access and refresh tokens are revoked, the authorization
 * codes not yet exchanged are deleted (else a code issued before a new password would still buy
 * tokens after it), and their sign-ins to the authorization pages end. Called when a user is blocked or gets a new password.
 * (Blocked users are refused on every request anyway; revoking makes unblocking start afresh.)
 * `keepChainId` spares one sign-in: the one with which users changed their own password.
 * An account rule, so it lives below the faces: saving a user (entities/) and `tilth user` call it.
 */
import type { Knex } from 'knex';
import { write } from '../storage/transactions.ts';

export async function revokeUserCredentials(db: Knex, userId: number, keepChainId?: string): Promise<void> {
  await write(db, async (trx) => {
    const revoked = Math.floor(Date.now() / 1000);
    for (const table of ['oauth_access_tokens', 'oauth_refresh_tokens']) {
      const q = trx(table).where('user_id', userId).whereNull('revoked');
      if (keepChainId) q.whereNot('chain_id', keepChainId);
      await q.update({ revoked });
    }
    await trx('oauth_authorization_codes').where('user_id', userId).whereNull('used').delete();
    await trx('oauth_sessions').where('user_id', userId).delete();
  });
}
