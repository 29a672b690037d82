/**
 * The rules for user names and e-mail addresses, one place for `tilth user create` (users.ts) and
 * the API (entities/account-saves.ts):
 * - a name is trimmed (and put in Unicode's composed form, NFC) before it is checked and stored;
 * - it is 1 to 60 characters, without two spaces in a row (as Drupal), without control, format or
 *   otherwise invisible characters (zero-width ones, bidi controls, C0 and C1 controls, spaces
 *   other than the plain one), and without the HTML-significant `<`, `>`, `&` and `"`; it contains
 *   `@` only as an e-mail address;
 * - no account's name or e-mail address may be another account's name or e-mail address, compared
 *   without regard to case (and to compatibility forms such as full-width letters): logins match
 *   either without regard to case (users.ts, findLogin), so each must name one account only.
 * Names stored before these rules existed are left alone: only a new name is checked.
 */
import type { Knex } from 'knex';
import { dialectOf } from '../storage/dialect.ts';

/** The PostgreSQL advisory lock that makes two saves of account names wait for each other. */
const ACCOUNT_NAMES_LOCK = 7_404_211_908;

export const USER_NAME_MAX = 60;

/** Characters that are invisible or change how text around them is shown (control, format, private-use, unassigned, default-ignorable, the blank braille pattern). */
const INVISIBLE_CHAR = '[\\p{Cc}\\p{Cf}\\p{Cs}\\p{Co}\\p{Cn}\\p{Default_Ignorable_Code_Point}\\u2800]';
/** An invisible character, or a space other than U+0020 (no-break, ideographic, tab, line breaks…). */
const INVISIBLE = new RegExp(`${INVISIBLE_CHAR}|(?! )\\s`, 'u');
const INVISIBLE_ALL = new RegExp(INVISIBLE_CHAR, 'gu');
const HTML_SIGNIFICANT = /[<>&"]/;

/** A name as it is checked and stored: trimmed, composed. */
export function normalizeUserName(name: string): string {
  return name.trim().normalize('NFC');
}

/** What is wrong with a (normalized) user name, or null. */
export function userNameProblem(name: string): string | null {
  if (!name || name.length > USER_NAME_MAX) return `A user name must be 1 to ${USER_NAME_MAX} characters long.`;
  if (INVISIBLE.test(name))
    return 'A user name may not contain invisible or control characters (zero-width or bidirectional marks, control characters, spaces other than the plain space).';
  if (HTML_SIGNIFICANT.test(name)) return 'A user name may not contain <, >, & or ".';
  if (name.includes('  ')) return 'A user name may not contain two spaces in a row.';
  if (name.includes('@') && !/^[^@\s]+@[^@\s]+$/.test(name))
    return 'A user name may contain @ only as an e-mail address.';
  return null;
}

/** The form in which names and e-mail addresses are compared: compatibility forms and case folded, invisible characters dropped. */
export function accountKey(value: string): string {
  return value.normalize('NFKC').replace(INVISIBLE_ALL, '').trim().toLowerCase();
}

export interface AccountClash {
  field: 'name' | 'mail';
  value: string;
  message: string;
}

/**
 * The given name and e-mail address (either may be left out) that another account already has as
 * its name or its e-mail address, without regard to case. `exceptId` is the account being saved.
 * Every account is compared in JavaScript, since SQLite's lower() folds ASCII letters only; a farm
 * has tens of accounts, not millions. Call it inside the transaction that saves the account: on
 * PostgreSQL it takes a lock until that transaction ends, so that two accounts saved at once
 * cannot both take a name (SQLite runs one write transaction at a time).
 */
export async function accountClashes(
  db: Knex,
  values: { name?: string | null; mail?: string | null },
  exceptId: number | null,
): Promise<AccountClash[]> {
  const wanted = (['name', 'mail'] as const).filter((f) => typeof values[f] === 'string' && values[f]);
  if (!wanted.length) return [];
  // After the account's own row, before the rest (the global lock order, storage/locks.ts).
  await dialectOf(db).transactionLock(db, ACCOUNT_NAMES_LOCK);
  const taken = new Set<string>();
  const rows: Array<{ name: string | null; mail: string | null }> = await db('users')
    .whereNot('id', exceptId ?? -1)
    .select('name', 'mail');
  for (const row of rows) {
    if (row.name) taken.add(accountKey(row.name));
    if (row.mail) taken.add(accountKey(row.mail));
  }
  return wanted
    .filter((field) => taken.has(accountKey(values[field]!)))
    .map((field) => ({
      field,
      value: values[field]!,
      message: `"${values[field]}" is already taken: another account has it as its name or e-mail address (compared without regard to case).`,
    }));
}
