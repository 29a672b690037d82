/**
 * Rate-limit counters shared by every server process over one PostgreSQL database
 * (access/shared-rate-limiter.ts): one row per limited key (an address, an account) and its fixed
 * window, timed by the database's clock; and the addresses each account signed in from, which
 * keep an allowance of their own (accounts/known-addresses.ts). SQLite keeps its counters in the server's memory (one
 * process serves a SQLite file), but gets the table too, so the two schemas stay alike.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tilth_rate_limits', (t) => {
    t.text('key').primary();
    t.integer('count').notNullable();
    // When the window ends; rows whose window ended are deleted now and then.
    t.timestamp('reset_at', { useTz: true }).notNullable();
    t.index(['reset_at'], 'tilth_rate_limits_reset_idx');
  });
  await knex.schema.createTable('tilth_known_addresses', (t) => {
    t.integer('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('address').notNullable();
    // Until when the address counts as the account's own.
    t.timestamp('until', { useTz: true }).notNullable();
    t.primary(['user_id', 'address']);
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
