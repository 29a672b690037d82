/**
 * User accounts: creation, passwords, blocking, roles, and login by name or e-mail. What a name may
 * be, and that names and e-mail addresses name one account each, is names.ts's (the API's too).
 * Users are records of the `user` entity type (table `users`); roles live in `user_role`.
 */
import { inUnitOfWork, noteChanged } from '../storage/unit-of-work.ts';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { hashPassword } from './passwords.ts';
import { accountClashes, normalizeUserName, userNameProblem } from './names.ts';
import { isRole, ROLES, type Role } from '../access/roles.ts';
import { selectRows } from '../storage/sql.ts';
import { dialectOf } from '../storage/dialect.ts';
import { defaultValue, hasDefault } from '../model/defaults.ts';
import { descriptor as USER_BUNDLE } from '../../generated/descriptors/user--user.ts';
import { write } from '../storage/transactions.ts';

export interface UserAccount {
  id: number;
  uuid: string;
  name: string;
  mail: string | null;
  status: boolean;
  roles: Role[];
}

export class AccountError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AccountError';
  }
}

const now = () => Math.floor(Date.now() / 1000);

/** The roles of some users, each list in name order: one statement, whatever the number of users. */
async function rolesOf(knex: Knex, ids: number[]): Promise<Map<number, Role[]>> {
  const dialect = dialectOf(knex);
  const single = ids.length === 1;
  const sql = `SELECT user_id, role FROM user_role WHERE ${dialect.inIdList('user_id', { single })} ORDER BY role`;
  const rows = ids.length
    ? await selectRows<{ user_id: number; role: string }>(knex, sql, [dialect.idListParameter(ids)])
    : [];
  const out = new Map<number, Role[]>();
  for (const r of rows) if (isRole(r.role)) out.set(r.user_id, [...(out.get(r.user_id) ?? []), r.role]);
  return out;
}

function toAccount(
  row: { id: number; uuid: string; name: string; mail: string | null; status: unknown },
  roles: Role[],
): UserAccount {
  return { id: row.id, uuid: row.uuid, name: row.name, mail: row.mail, status: Boolean(row.status), roles };
}

/** findUser's statements, by what the account is found by. */
const FIND_USER = {
  id: 'SELECT id, uuid, name, mail, status FROM users WHERE id = ? LIMIT 1',
  uuid: 'SELECT id, uuid, name, mail, status FROM users WHERE uuid = ? LIMIT 1',
  name: "SELECT id, uuid, name, mail, status FROM users WHERE bundle = 'user' AND name = ? LIMIT 1",
};

/** An account by id, UUID or name, with its roles: every token grant asks (two statements, written once). */
export async function findUser(
  knex: Knex,
  by: { id?: number; uuid?: string; name?: string },
): Promise<UserAccount | null> {
  const [sql, value] =
    by.id !== undefined
      ? [FIND_USER.id, by.id]
      : by.uuid !== undefined
        ? [FIND_USER.uuid, by.uuid]
        : by.name !== undefined
          ? [FIND_USER.name, by.name]
          : [];
  if (!sql) return null;
  const [row] = await selectRows<{ id: number; uuid: string; name: string; mail: string | null; status: unknown }>(
    knex,
    sql,
    [value!],
  );
  if (!row) return null;
  return toAccount(row, await rolesOfUser(knex, row.id));
}

export async function listUsers(knex: Knex): Promise<UserAccount[]> {
  const rows = await knex('users').select('id', 'uuid', 'name', 'mail', 'status').orderBy('id');
  const roles = await rolesOf(
    knex,
    rows.map((r: { id: number }) => r.id),
  );
  return rows.map((r: { id: number; uuid: string; name: string; mail: string | null; status: unknown }) =>
    toAccount(r, roles.get(r.id) ?? []),
  );
}

export function validateRoles(roles: string[]): Role[] {
  for (const role of roles) {
    if (!isRole(role)) throw new AccountError(`Unknown role "${role}". Roles are: ${ROLES.join(', ')}.`);
  }
  return [...new Set(roles)] as Role[];
}

/** Check a user name by the rules of names.ts; returns it as stored (trimmed). */
export function validateUserName(name: string): string {
  const normalized = normalizeUserName(name);
  const problem = userNameProblem(normalized);
  if (problem) throw new AccountError(problem);
  return normalized;
}

export function validatePassword(password: string): void {
  if (password.length < 8) throw new AccountError('A password must be at least 8 characters long.');
  if (password.length > 1024) throw new AccountError('A password may be at most 1024 characters long.');
}

/**
 * The columns a new account gets from the defaults definitions/entity-types/user.yaml declares
 * (status, timezone, preferred language), applied as every new record's are (model/defaults.ts).
 */
function defaultColumns(now: number): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  for (const field of USER_BUNDLE.fields) {
    if (field.computed || !hasDefault(field) || field.storage.kind !== 'columns' || !field.storage.columns.value)
      continue;
    columns[field.storage.columns.value] = defaultValue(field, now);
  }
  return columns;
}

export async function createUser(
  knex: Knex,
  input: { name: string; password: string; mail?: string | null; roles?: string[]; uuid?: string },
): Promise<UserAccount> {
  const name = validateUserName(input.name);
  validatePassword(input.password);
  const roles = validateRoles(input.roles ?? []);
  if (input.mail && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(input.mail))
    throw new AccountError(`"${input.mail}" is not an e-mail address.`);
  const pass = await hashPassword(input.password);
  return write(knex, (trx) =>
    inUnitOfWork(trx, async () => {
      const [clash] = await accountClashes(trx, { name, mail: input.mail }, null);
      if (clash) throw new AccountError(`The ${clash.field === 'name' ? 'name' : 'e-mail address'} ${clash.message}`);
      const t = now();
      const uuid = input.uuid ?? randomUUID();
      const [row] = await trx('users')
        .insert({
          ...defaultColumns(t),
          uuid,
          bundle: 'user',
          name,
          pass,
          mail: input.mail ?? null,
          init: input.mail ?? null,
          created: t,
          changed: t,
        })
        .returning('id');
      const id = typeof row === 'object' ? (row as { id: number }).id : (row as number);
      if (roles.length) await trx('user_role').insert(roles.map((role) => ({ user_id: id, role })));
      await noteChanged(trx, 'user', [{ id, uuid, bundle: 'user' }]);
      return { id, uuid, name, mail: input.mail ?? null, status: true, roles };
    }),
  );
}

/**
 * The account an administrator names on the command line, found as signing in finds it: the
 * name without regard to case or surrounding spaces, an exact match first. Names that differ
 * only by case (kept from before names were unique that way) must be typed exactly.
 */
export async function accountNamed(knex: Knex, typed: string): Promise<UserAccount> {
  const name = typed.trim();
  const rows = (await knex('users')
    .where('bundle', 'user')
    .whereRaw('lower(name) = lower(?)', [name])
    .orderByRaw('CASE WHEN name = ? THEN 0 ELSE 1 END, id', [name])
    .limit(2)
    .select('id', 'uuid', 'name', 'mail', 'status')) as Array<{
    id: number;
    uuid: string;
    name: string;
    mail: string | null;
    status: unknown;
  }>;
  const row = rows[0]?.name === name || rows.length === 1 ? rows[0] : null;
  if (!row) {
    if (rows.length > 1)
      throw new AccountError(
        `"${name}" names two users, "${rows[0]!.name}" and "${rows[1]!.name}": give the name exactly as it is written.`,
      );
    throw new AccountError(`There is no user named "${name}".`);
  }
  return toAccount(row, await rolesOfUser(knex, row.id));
}

/**
 * A change of an account, in a transaction of its own, kept as every write of a record is: the
 * account is a new version (its ETag moves, the change feed lists it: storage/unit-of-work.ts),
 * whatever of it the change shows (`changed`, its status, its roles relationship).
 */
async function changeAccount(
  knex: Knex,
  user: UserAccount,
  change: (trx: Knex.Transaction) => Promise<unknown>,
): Promise<void> {
  await write(knex, (trx) =>
    inUnitOfWork(trx, async () => {
      await change(trx);
      await noteChanged(trx, 'user', [{ id: user.id, uuid: user.uuid, bundle: 'user' }]);
    }),
  );
}

/** Set the password of the account `name` names (accountNamed); returns the account. */
export async function setPassword(knex: Knex, name: string, password: string): Promise<UserAccount> {
  validatePassword(password);
  const user = await accountNamed(knex, name);
  // Hashed before the transaction: no transaction waits on the hash.
  const pass = await hashPassword(password);
  await changeAccount(knex, user, (trx) => trx('users').where('id', user.id).update({ pass, changed: now() }));
  return user;
}

/** Block or unblock the account `name` names (accountNamed); returns the account. */
export async function setBlocked(knex: Knex, name: string, blocked: boolean): Promise<UserAccount> {
  const user = await accountNamed(knex, name);
  await changeAccount(knex, user, (trx) =>
    trx('users').where('id', user.id).update({ status: !blocked, changed: now() }),
  );
  return user;
}

/** Replace the roles of the account `name` names (accountNamed); returns the account. */
export async function setRoles(knex: Knex, name: string, roles: string[]): Promise<UserAccount> {
  const valid = validateRoles(roles);
  const user = await accountNamed(knex, name);
  await changeAccount(knex, user, (trx) => replaceRoles(trx, user.id, valid));
  return user;
}

/**
 * The account a login names: its user name, or else its e-mail address, compared without regard
 * to case or surrounding spaces as Drupal does (phones capitalise the first letter). An exact
 * match wins; a login that matches two accounts only by case names neither.
 */
export async function findLogin(knex: Knex, login: string): Promise<(UserAccount & { pass: string | null }) | null> {
  const typed = login.trim();
  if (!typed) return null;
  const rows = await knex('users')
    .where('bundle', 'user')
    .andWhere((q) => q.whereRaw('lower(name) = lower(?)', [typed]).orWhereRaw('lower(mail) = lower(?)', [typed]))
    .orderByRaw('CASE WHEN name = ? THEN 0 WHEN mail = ? THEN 1 ELSE 2 END, id', [typed, typed])
    .limit(2)
    .select('id', 'uuid', 'name', 'mail', 'status', 'pass');
  const exact = rows[0] && (rows[0].name === typed || rows[0].mail === typed);
  const row = exact || rows.length === 1 ? rows[0] : null;
  if (!row) return null;
  return { ...toAccount(row, (await rolesOf(knex, [row.id])).get(row.id) ?? []), pass: row.pass ?? null };
}

/** Replace an account's password hash `old` by `hash`, unless it was changed meanwhile (same password, new parameters). */
export async function replacePasswordHash(knex: Knex, userId: number, old: string, hash: string): Promise<void> {
  await knex('users').where({ id: userId, pass: old }).update({ pass: hash });
}

/** The stored password hash of an account. */
export async function passwordHashOf(knex: Knex, userId: number): Promise<string | null> {
  const row = await knex('users').where('id', userId).first('pass');
  return row?.pass ?? null;
}

/** Replace the roles of an account (within the caller's transaction). */
export async function replaceRoles(db: Knex, userId: number, roles: readonly Role[]): Promise<void> {
  await db('user_role').where('user_id', userId).delete();
  if (roles.length) await db('user_role').insert([...new Set(roles)].map((role) => ({ user_id: userId, role })));
}

/** The roles an account holds. */
export async function rolesOfUser(knex: Knex, userId: number): Promise<Role[]> {
  return (await rolesOf(knex, [userId])).get(userId) ?? [];
}

/** Record a successful login (Drupal's `login` and `access` timestamps). */
export async function recordLogin(knex: Knex, userId: number): Promise<void> {
  const t = now();
  await knex('users').where('id', userId).update({ login: t, access: t });
}
