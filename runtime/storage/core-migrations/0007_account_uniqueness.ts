/**
 * No two accounts with one name or one e-mail address, compared without regard to case, enforced
 * by the database as well as by accounts/names.ts: with several server processes over one
 * database, a check in one process's code is not enough on its own (issue 26). lower() is what
 * logins compare (accounts/users.ts, findLogin), so the same indexes make a login one indexed
 * lookup. names.ts compares more loosely still (compatibility forms, invisible characters, a name
 * against every e-mail address); what these indexes refuse, it refuses first, so a save meets
 * them only in a race it lost, answered with names.ts's 422 (storage/db-errors.ts).
 *
 * A farm whose accounts already share a name or an address cannot get the indexes: the migration
 * stops, naming them, and changes nothing until one of each is renamed.
 *
 * Also the index on oauth_authorization_codes.user_id that deleting or blocking a user needs.
 */
import type { Knex } from 'knex';

/** The indexes' names, which storage/db-errors.ts recognises in a violation. */
export const ACCOUNT_UNIQUE_INDEXES = { name: 'users_name_lower_uniq', mail: 'users_mail_lower_uniq' } as const;

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('oauth_authorization_codes', (t) =>
    t.index(['user_id'], 'oauth_authorization_codes_user_idx'),
  );
  // A data model without accounts (the generator's own tests) has no users table.
  if (!(await knex.schema.hasTable('users'))) return;
  const clashes: string[] = [];
  for (const field of ['name', 'mail'] as const) {
    const rows: Array<{ id: number; value: string; key: string }> = await knex('users')
      .whereRaw(
        `lower(${field}) IN (SELECT lower(${field}) FROM users WHERE ${field} IS NOT NULL AND ${field} <> '' GROUP BY lower(${field}) HAVING COUNT(*) > 1)`,
      )
      .orderBy('id')
      .select('id', { value: field }, knex.raw(`lower(${field}) AS "key"`));
    const groups = new Map<string, string[]>();
    for (const row of rows) groups.set(row.key, [...(groups.get(row.key) ?? []), `"${row.value}" (user ${row.id})`]);
    for (const members of groups.values()) clashes.push(`${field} ${members.join(' and ')}`);
  }
  if (clashes.length) {
    throw new Error(
      `Some accounts share a name or e-mail address (compared without regard to case): ${clashes.join('; ')}. ` +
        'Logins cannot tell them apart. Nothing was changed: rename one of each (as an administrator, with the release you upgrade from, or in the database), then start again.',
    );
  }
  for (const [field, index] of Object.entries(ACCOUNT_UNIQUE_INDEXES)) {
    await knex.raw(
      `CREATE UNIQUE INDEX ${index} ON users (lower(${field})) WHERE ${field} IS NOT NULL AND ${field} <> ''`,
    );
  }
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
