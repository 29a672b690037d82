/** Password hashing with argon2id. Only hashes are stored; verification is constant-time in argon2. */
import { randomBytes } from 'node:crypto';
import argon2 from 'argon2';

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, { type: argon2.argon2id });
}

/** A hash to verify against when the user does not exist, so that timing does not reveal which names exist. */
let decoy: Promise<string> | null = null;

export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (!hash) {
    decoy ??= hashPassword('decoy password that never matches');
    await argon2.verify(await decoy, password).catch(() => false);
    return false;
  }
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}

/** A password made for someone who gave none (the first administrator, `tilth user`): 96 random bits, shown once. */
export function generatePassword(): string {
  return randomBytes(12).toString('base64url');
}
