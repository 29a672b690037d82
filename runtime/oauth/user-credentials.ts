/**
 * Ending everything a user holds: their access and refresh tokens are revoked and their
 * sign-ins to the authorization pages end. Called when a user is blocked or gets a new password.
 * (Blocked users are refused on every request anyway; revoking makes unblocking start afresh.)
 * `keepChainId` spares one sign-in: the one with which users changed their own password.
 */
import type { Knex } from 'knex';
import { tokenStore } from './tokens.ts';

export async function revokeUserCredentials(db: Knex, userId: number, keepChainId?: string): Promise<void> {
  await db.transaction(async (trx) => {
    await tokenStore(trx).revokeUser(userId, keepChainId);
    await trx('oauth_sessions').where('user_id', userId).delete();
  });
}
