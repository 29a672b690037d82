/**
 * The addresses each account signed in from successfully, which keep an allowance of their own
 * for that account (accounts/password-guard.ts explains why): in this process's memory on
 * SQLite, in the database (tilth_known_addresses) on PostgreSQL, so that an owner who signed in
 * through one process keeps their allowance on every other.
 */
import type { Knex } from 'knex';
import type { Database } from '../storage/database.ts';

/** How long an address a user signed in from keeps its own allowance. */
const KNOWN_DAYS = 30;
/** Addresses remembered per account (the most recent), and accounts remembered at most (in memory). */
const KNOWN_PER_ACCOUNT = 20;
const KNOWN_ACCOUNTS = 100_000;

export interface KnownAddresses {
  /** Whether `userId` signed in from `address` in the last KNOWN_DAYS days. */
  isKnown(userId: number, address: string): boolean | Promise<boolean>;
  /** Remember a successful sign-in of `userId` from `address`. */
  remember(userId: number, address: string): void | Promise<void>;
}

export function knownAddressesFor(db: Database): KnownAddresses {
  return db.dialect === 'postgres' ? new SharedKnownAddresses(db.knex) : new KnownAddressesInMemory();
}

export class KnownAddressesInMemory implements KnownAddresses {
  /** Per account, the addresses it signed in from and until when they count as its own (Unix ms), oldest first. */
  private readonly known = new Map<number, Map<string, number>>();

  isKnown(userId: number, address: string, at = Date.now()): boolean {
    return (this.known.get(userId)?.get(address) ?? 0) > at;
  }

  remember(userId: number, address: string, at = Date.now()): void {
    let addresses = this.known.get(userId);
    if (!addresses) {
      if (this.known.size >= KNOWN_ACCOUNTS) this.known.delete(this.known.keys().next().value!);
      this.known.set(userId, (addresses = new Map()));
    }
    addresses.delete(address); // re-inserted last: the most recent
    addresses.set(address, at + KNOWN_DAYS * 86_400_000);
    if (addresses.size > KNOWN_PER_ACCOUNT) addresses.delete(addresses.keys().next().value!);
  }
}

/** On the database's clock; an account keeps its KNOWN_PER_ACCOUNT most recent addresses. */
class SharedKnownAddresses implements KnownAddresses {
  constructor(private readonly knex: Knex) {}

  async isKnown(userId: number, address: string): Promise<boolean> {
    const { rows } = await this.knex.raw(
      'SELECT 1 FROM tilth_known_addresses WHERE user_id = ? AND address = ? AND until > now()',
      [userId, address],
    );
    return rows.length > 0;
  }

  async remember(userId: number, address: string): Promise<void> {
    await this.knex.raw(
      `INSERT INTO tilth_known_addresses (user_id, address, until) VALUES (?, ?, now() + make_interval(days => ?))
       ON CONFLICT (user_id, address) DO UPDATE SET until = EXCLUDED.until`,
      [userId, address, KNOWN_DAYS],
    );
    await this.knex.raw(
      `DELETE FROM tilth_known_addresses WHERE user_id = ? AND (until <= now() OR address NOT IN
         (SELECT address FROM tilth_known_addresses WHERE user_id = ? ORDER BY until DESC LIMIT ?))`,
      [userId, userId, KNOWN_PER_ACCOUNT],
    );
  }
}
