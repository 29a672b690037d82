/** `tilth user create|password|block|roles|list`. */
import type { Knex } from 'knex';
import type { Command } from './command.ts';
import { requireOption, UsageError } from './command.ts';
import { withExistingDatabase, withFarm } from './database.ts';
import {
  AccountError,
  accountNamed,
  createUser,
  listUsers,
  setBlocked,
  setPassword,
  setRoles,
} from '../accounts/users.ts';
import { FIRST_USER_ID } from '../access/accounts.ts';
import type { RecordStore } from '../storage/records.ts';
import { deleteUnderLocks } from '../entities/deletion-locks.ts';
import { referencedRefusal } from '../entities/reference-integrity.ts';
import { revokeUserCredentials } from '../accounts/credentials.ts';
import { generatePassword } from '../accounts/passwords.ts';
import { ROLES } from '../access/roles.ts';
import { write } from '../storage/transactions.ts';

/**
 * What `tilth user delete` does with the references other records hold to the user: refuse (the
 * default, as DELETE /api/user/user/<uuid> refuses: entities/reference-integrity.ts), clear them
 * (--clear-references), or give them to another user (--reassign-to: that user's id).
 */
export type UserReferences = 'refuse' | 'clear' | { reassignTo: number };

/**
 * `tilth user delete`: the same deletion as DELETE /api/user/user/<uuid>, in a transaction. A user
 * other records reference (their owner or author) is not deleted unless told what to do with the
 * references (`references`); a revision's user is cleared in every case, as the API does. A
 * server may be running on the same PostgreSQL database: as that DELETE does, the user's row (and
 * the heir's) is locked first (its findForUpdate), then the records whose references change
 * (entities/deletion-locks.ts), so that a save of one of them waits for this, or this for it,
 * instead of the two deadlocking (test/cli/user-delete.test.ts); the references are checked after
 * those locks, when no save can add one.
 */
export async function deleteAccount(
  knex: Knex,
  store: RecordStore,
  id: number,
  references: UserReferences = 'refuse',
): Promise<void> {
  const heir = typeof references === 'object' ? references.reassignTo : null;
  if (heir === id)
    throw new AccountError('A user cannot be reassigned its own references: name another user with --reassign-to.');
  await write(knex, (trx) =>
    deleteUnderLocks(trx, store, 'user', [id], {
      alsoLock: heir === null ? [] : [heir],
      going: async (ids) => {
        if (references !== 'refuse') return ids;
        const [user] = await store.load(trx, 'user', ids);
        const refusal = user ? await referencedRefusal(trx, store, user) : null;
        if (refusal)
          throw new AccountError(
            `${refusal} Not deleted: add --reassign-to NAME to give these references to another user, or --clear-references to remove them.`,
          );
        return ids;
      },
      // Every reference moves, a revision's user too: none is left for the delete to clear.
      before: async () => {
        if (heir !== null) await store.moveReferences(trx, 'user', id, heir);
      },
    }),
  );
}

/** The --password given, or one generated (which the command then prints once). */
function passwordOf(values: Record<string, unknown>): { password: string; generated: boolean } {
  return typeof values.password === 'string'
    ? { password: values.password, generated: false }
    : { password: generatePassword(), generated: true };
}

const list = (v: unknown): string[] =>
  (Array.isArray(v) ? v : typeof v === 'string' ? [v] : [])
    .flatMap((s: string) => s.split(','))
    .map((s) => s.trim())
    .filter(Boolean);

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
      const user = await withExistingDatabase((knex) =>
        createUser(knex, { name, password, mail: (values.email as string) ?? null, roles: list(values.role) }),
      );
      process.stdout.write(
        `Created user "${user.name}" (${user.uuid}) with role(s): ${user.roles.join(', ') || 'none'}.\n`,
      );
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
      process.stdout.write(
        `${values.unblock ? 'Unblocked' : 'Blocked'} "${user.name}"${values.unblock ? '' : '; their tokens are revoked'}.\n`,
      );
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
      const user = await withExistingDatabase((knex) =>
        setRoles(knex, requireOption(values, 'name'), list(values.role)),
      );
      process.stdout.write(`Set the roles of "${user.name}" to: ${list(values.role).join(', ') || 'none'}.\n`);
      return 0;
    },
  },
  {
    name: ['user', 'delete'],
    summary:
      'Delete a user: their tokens go. A user whose records name them (owner, author) is kept unless --reassign-to or --clear-references says what to do. User 1 cannot be deleted (block it instead).',
    usage: 'tilth user delete --name NAME [--reassign-to NAME | --clear-references]',
    options: {
      name: { type: 'string', description: 'login name' },
      'reassign-to': {
        type: 'string',
        description:
          "another user's login name: the records that name the deleted user (owner, author) name this one instead",
      },
      'clear-references': {
        type: 'boolean',
        description: 'remove the references to the user from the records that name them',
      },
    } as Command['options'],
    async run(values) {
      if (values['reassign-to'] !== undefined && values['clear-references'])
        throw new UsageError('Give --reassign-to or --clear-references, not both.');
      const { user, heir } = await withFarm(async (farm) => {
        const knex = farm.db.knex;
        const user = await accountNamed(knex, requireOption(values, 'name'));
        if (user.id === FIRST_USER_ID)
          throw new AccountError(
            `"${user.name}" is user 1, the first administrator, and cannot be deleted; block it instead (tilth user block --name ${user.name}).`,
          );
        const heir =
          values['reassign-to'] !== undefined ? await accountNamed(knex, requireOption(values, 'reassign-to')) : null;
        const references: UserReferences = heir
          ? { reassignTo: heir.id }
          : values['clear-references']
            ? 'clear'
            : 'refuse';
        await deleteAccount(knex, farm.services.store, user.id, references);
        return { user, heir };
      });
      const after = heir
        ? `; their records name "${heir.name}" instead`
        : values['clear-references']
          ? '; their records no longer name them'
          : '';
      process.stdout.write(`Deleted "${user.name}"; their tokens are revoked${after}.\n`);
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
      for (const u of users)
        process.stdout.write(`${u.name}\t${u.uuid}\t${u.status ? 'active' : 'blocked'}\t${u.roles.join(',')}\n`);
      return 0;
    },
  },
];
