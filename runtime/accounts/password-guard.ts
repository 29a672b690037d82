/**
 * Every place that checks a password goes through here: the password grant, the sign-in form of
 * the authorization pages, and `pass.existing` when users change their own password. Checks
 * count per account, whatever identifier was typed (its name or its e-mail address), so a
 * guesser cannot double their tries by alternating; a success clears the count, so the owner,
 * who types it right, is not held back. Over the limit every check answers "wait" without
 * looking at the password at all, even a right one.
 *
 * Each check reserves its attempt before the password is hashed (counting it synchronously in
 * memory, or in one statement in the database on PostgreSQL, so that no other request, of this
 * process or another, can slip in between), and only a success gives it back.
 * Counting after the hash let every guess that arrived while the first ones were hashing through:
 * 60 wrong passwords at once were 60 checks, not 20.
 *
 * Logins that name no account are counted under the typed text, so probing unknown names stalls
 * the same way and timing does not tell which names exist.
 *
 * Strangers cannot spend the owner's tries. An address from which the account signed in
 * successfully (in the last KNOWN_DAYS days) has an allowance of its own for that account, so a
 * guesser elsewhere who uses up the account's shared allowance locks out only other new places,
 * not the owner's own browser, phone or script (OWASP's "device cookie" idea, keyed by address,
 * since the token endpoint's clients keep no cookies). A guesser on the owner's own address shares
 * the owner's allowance, as before.
 */
import type { Knex } from 'knex';
import type { Limiter } from '../access/rate-limiter.ts';
import { HashingBusy, hashingOpen, hashPassword, needsNewHash, verifyPassword } from './passwords.ts';
import { findLogin, passwordHashOf, replacePasswordHash, type UserAccount } from './users.ts';
import { KnownAddressesInMemory, type KnownAddresses } from './known-addresses.ts';

export type LoginCheck =
  | { outcome: 'ok'; account: UserAccount }
  /** `userId`: the account the login named, or null when it named none. */
  | { outcome: 'wrong'; userId: number | null }
  | { outcome: 'blocked' }
  /** Too many failures of this account: try again in `seconds`. */
  | { outcome: 'wait'; seconds: number }
  /** Too many passwords being checked in this process (accounts/passwords.ts): try again in `seconds`; nothing was counted. */
  | { outcome: 'busy'; seconds: number };

const accountKey = (userId: number) => `account:${userId}`;
const knownAddressKey = (userId: number, address: string) => `account:${userId}@${address}`;
const BUSY: LoginCheck = Object.freeze({ outcome: 'busy', seconds: 1 });
const unknownLoginKey = (login: string) => `login:${login.trim().toLowerCase()}`;

export class PasswordGuard {
  constructor(
    private readonly failures: Limiter,
    /** The addresses accounts signed in from (accounts/known-addresses.ts). */
    private readonly known: KnownAddresses = new KnownAddressesInMemory(),
  ) {}

  /**
   * Check a login (user name or e-mail address) and password, sent from `address` (the client's,
   * as the rate limits see it; omitted where there is none, e.g. the command line).
   */
  async login(knex: Knex, login: string, password: string, address?: string): Promise<LoginCheck> {
    const account = login ? await findLogin(knex, login) : null;
    const key = account ? await this.keyOf(account.id, address) : unknownLoginKey(login);
    if (!hashingOpen()) return BUSY;
    const wait = await this.failures.hit(key);
    if (wait) return { outcome: 'wait', seconds: wait };
    let ok: boolean;
    try {
      ok = await verifyPassword(account?.pass ?? null, password);
    } catch (error) {
      // Not checked, so not counted: a flood of other sign-ins must not spend this account's tries.
      await this.failures.release(key);
      if (error instanceof HashingBusy) return BUSY;
      throw error;
    }
    // A blocked account answers the same whether the password was right, as Drupal names a
    // blocked account before it looks at the password: the answer tells a guesser nothing.
    if (account && !account.status) return { outcome: 'blocked' };
    if (!account || !ok) return { outcome: 'wrong', userId: account?.id ?? null };
    await this.failures.reset(key);
    if (address) await this.known.remember(account.id, address);
    if (account.pass && needsNewHash(account.pass)) await this.hashAgain(knex, account.id, account.pass, password);
    const { pass: _hash, ...rest } = account;
    return { outcome: 'ok', account: rest };
  }

  /**
   * Check the current password of an account someone is signed in to (e.g. before changing it),
   * sent from `address`: it spends the same allowance as a sign-in from there.
   */
  async confirm(
    knex: Knex,
    userId: number,
    password: string,
    address?: string,
  ): Promise<'ok' | 'wrong' | { waitSeconds: number }> {
    const key = await this.keyOf(userId, address);
    const hash = await passwordHashOf(knex, userId);
    if (!hashingOpen()) throw new HashingBusy();
    const wait = await this.failures.hit(key);
    if (wait) return { waitSeconds: wait };
    let ok: boolean;
    try {
      ok = await verifyPassword(hash, password);
    } catch (error) {
      await this.failures.release(key);
      throw error;
    }
    if (!ok) return 'wrong';
    await this.failures.reset(key);
    return 'ok';
  }

  /**
   * Store the password, just checked right, hashed with today's parameters (passwords.ts,
   * `needsNewHash`). Best effort: when the server is too busy hashing, the next sign-in does it;
   * a hash changed meanwhile (a new password) is left alone.
   */
  private async hashAgain(knex: Knex, userId: number, old: string, password: string): Promise<void> {
    let hash: string;
    try {
      hash = await hashPassword(password);
    } catch (error) {
      if (error instanceof HashingBusy) return;
      throw error;
    }
    await replacePasswordHash(knex, userId, old, hash);
  }

  /** The allowance an attempt on this account from `address` spends: the address's own once the account signed in from it, else the account's shared one. */
  private async keyOf(userId: number, address: string | undefined): Promise<string> {
    return address && (await this.known.isKnown(userId, address))
      ? knownAddressKey(userId, address)
      : accountKey(userId);
  }
}
