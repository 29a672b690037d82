/** `tilth user create|password|block|roles|list`. */
import type { Knex } from 'knex';
import type { Command } from './command.ts';
import { requireOption } from './command.ts';
import { withExistingDatabase } from './database.ts';
import { AccountError, accountNamed, createUser, listUsers, setBlocked, setPassword, setRoles } from '../accounts/users.ts';
import { FIRST_USER_ID } from '../access/accounts.ts';
import { RecordStore, lockRows } from '../storage/records.ts';
import { lockForDeletion } from '../entities/deletion-locks.ts';
import { ModelRegistry } from '../model/registry.ts';
import { loadGenerated } from '../generated.ts';
import { loadConfig } from '../config.ts';
import { revokeUserCredentials } from '../accounts/credentials.ts';
import { generatePassword } from '../accounts/passwords.ts';
import { ROLES } from '../access/roles.ts';


/**
 * `tilth user delete`: the same deletion as DELETE /api/user/user/<uuid>, in a transaction;
 * references to the user are cleared. A server may be running on the same PostgreSQL database: as
 * that DELETE does, the user's row is locked first (its findForUpdate), then the records whose
 * references go (entities/deletion-locks.ts), so that a save of one of them waits for this, or
 * this for it, instead of the two deadlocking (test/cli/user-delete.test.ts).
 */
export async function deleteAccount(knex: Knex, store: RecordStore, id: number): Promise<void> {
  await knex.transaction(async (trx) => {
    await lockRows(trx, store.entityType('user').table, [id]);
    await store.delete(trx, 'user', [id], await lockForDeletion(trx, store, 'user', [id]));
  });
}

/** The --password given, or one generated (which the command then prints once). */
function passwordOf(values: Record<string, unknown>): { password: string; generated: boolean } {
  return typeof values.password === 'string' ? { password: values.password, generated: false } : { password: generatePassword(), generated: true };
}

const list = (v: unknown): string[] => (Array.isArray(v) ? v : typeof v === 'string' ? [v] : []).flatMap((s: string) => s.split(',')).map((s) => s.trim()).filter(Boolean);

export const userCommands: Command[] = [
  {
    name: ['user', 'create'],
    summary: `Create a user. Roles: ${ROLES.join(', ')}.`,
    usage: 'tilth user create --name NAME [--password PASSWORD] [--email ADDRESS] [--role ROLE …]',
    options: {
      name: { type: 'string', description: 'login name' },
      password: { type: 'string', description: 'password (generated and printed once if left out)' },
      email: { type: 'string', description: 'e-mail address (also accepted as login)' },
      role: { type: 'string', multiple: true, description: 'a role; repeat or separate with commas' },
    } as Command['options'],
    async run(values) {
      const name = requireOption(values, 'name');
      const { password, generated } = passwordOf(values);
      const user = await withExistingDatabase((knex) => createUser(knex, { name, password, mail: (values.email as string) ?? null, roles: list(values.role) }));
      process.stdout.write(`Created user "${user.name}" (${user.uuid}) with role(s): ${user.roles.join(', ') || 'none'}.\n`);
      if (generated) process.stdout.write(`Password (shown once): ${password}\n`);
      return 0;
    },
  },
  {
    name: ['user', 'password'],
    summary: "Set a user's password and revoke their tokens.",
    usage: 'tilth user password --name NAME [--password PASSWORD]',
    options: {
      name: { type: 'string', description: 'login name' },
      password: { type: 'string', description: 'new password (generated and printed once if left out)' },
    } as Command['options'],
    async run(values) {
      const { password, generated } = passwordOf(values);
      const user = await withExistingDatabase(async (knex) => {
        const user = await setPassword(knex, requireOption(values, 'name'), password);
        // A new password is often a response to a leak: whatever was issued with the old one ends.
        await revokeUserCredentials(knex, user.id);
        return user;
      });
      process.stdout.write(`Set the password of "${user.name}"; their tokens are revoked.\n`);
      if (generated) process.stdout.write(`Password (shown once): ${password}\n`);
      return 0;
    },
  },
  {
    name: ['user', 'block'],
    summary: 'Block a user: they can no longer get or use tokens.',
    usage: 'tilth user block --name NAME [--unblock]',
    options: {
      name: { type: 'string', description: 'login name' },
      unblock: { type: 'boolean', description: 'unblock instead' },
    } as Command['options'],
    async run(values) {
      const user = await withExistingDatabase(async (knex) => {
        const user = await setBlocked(knex, requireOption(values, 'name'), !values.unblock);
        if (!values.unblock) await revokeUserCredentials(knex, user.id);
        return user;
      });
      process.stdout.write(`${values.unblock ? 'Unblocked' : 'Blocked'} "${user.name}"${values.unblock ? '' : '; their tokens are revoked'}.\n`);
      return 0;
    },
  },
  {
    name: ['user', 'roles'],
    summary: "Replace a user's roles.",
    usage: 'tilth user roles --name NAME --role ROLE …',
    options: {
      name: { type: 'string', description: 'login name' },
      role: { type: 'string', multiple: true, description: 'a role; repeat or separate with commas' },
    } as Command['options'],
    async run(values) {
      const user = await withExistingDatabase((knex) => setRoles(knex, requireOption(values, 'name'), list(values.role)));
      process.stdout.write(`Set the roles of "${user.name}" to: ${list(values.role).join(', ') || 'none'}.\n`);
      return 0;
    },
  },
  {
    name: ['user', 'delete'],
    summary: 'Delete a user: their tokens go, their records stay without them. User 1 cannot be deleted (block it instead).',
    usage: 'tilth user delete --name NAME',
    options: {
      name: { type: 'string', description: 'login name' },
    } as Command['options'],
    async run(values) {
      const user = await withExistingDatabase(async (knex) => {
        const user = await accountNamed(knex, requireOption(values, 'name'));
        if (user.id === FIRST_USER_ID) throw new AccountError(`"${user.name}" is user 1, the first administrator, and cannot be deleted; block it instead (tilth user block --name ${user.name}).`);
        await deleteAccount(knex, new RecordStore(new ModelRegistry((await loadGenerated(undefined, loadConfig().siteDir)).model, loadConfig().modules)), user.id);
        return user;
      });
      process.stdout.write(`Deleted "${user.name}"; their tokens are revoked.\n`);
      return 0;
    },
  },
  {
    name: ['user', 'list'],
    summary: 'List users with their roles.',
    usage: 'tilth user list',
    options: {} as Command['options'],
    async run() {
      const users = await withExistingDatabase((knex) => listUsers(knex));
      for (const u of users) process.stdout.write(`${u.name}\t${u.uuid}\t${u.status ? 'active' : 'blocked'}\t${u.roles.join(',')}\n`);
      return 0;
    },
  },
];
