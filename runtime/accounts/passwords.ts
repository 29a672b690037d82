/**
 * Password hashing with argon2id. Only hashes are stored; verification is constant-time in argon2.
 *
 * Hashing is the dearest thing a request can ask for (tens of milliseconds of a core, 64 MB), and
 * anyone may ask for it by signing in. So this process hashes at most MAX_HASHING passwords at a
 * time, lets MAX_WAITING more wait their turn, and answers the rest at once with 503 and
 * Retry-After: without a ceiling, 150 sign-ins for unknown names took a real sign-in 20 s and
 * `GET /api` 1.1 s. (The queue is bounded by count, not time, so that a slow machine answers the
 * same requests the same way, only later.)
 */
import { availableParallelism } from 'node:os';
import { randomBytes } from 'node:crypto';
import argon2, { type HashOptions } from 'argon2';
import { ApiError } from '../errors.ts';
import { passwordHashCost, readEnvironment, type PasswordHashCost } from '../config.ts';

/** Hashes at once: all cores but one, which stays for answering everything else. */
const MAX_HASHING = Math.max(1, availableParallelism() - 1);
/** Hashes that may wait for a turn: a second or two's worth on an idle core. */
const MAX_WAITING = 8 * MAX_HASHING;

/** Too many passwords are being checked at once: try again in a second. */
export class HashingBusy extends ApiError {
  constructor() {
    super(503, 'The server is checking as many passwords as it can at once; try again in a moment.', {
      headers: { 'Retry-After': '1' },
    });
  }
}

/** A first-come queue of turns at hashing. */
class HashTurns {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  /** Whether a turn can be had now or after waiting (false: the queue is full). */
  get open(): boolean {
    return this.running < MAX_HASHING || this.waiting.length < MAX_WAITING;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= MAX_HASHING) {
      if (this.waiting.length >= MAX_WAITING) throw new HashingBusy();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running += 1;
    try {
      return await work();
    } finally {
      // The turn passes straight to the next in line, or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.running -= 1;
    }
  }
}

const turns = new HashTurns();

/** argon2id's parameters for each TILTH_PASSWORD_HASH setting (config.ts says why each). */
const PARAMETERS: Record<PasswordHashCost, { memoryCost: number; timeCost: number; parallelism: number }> = {
  strong: { memoryCost: 65_536, timeCost: 3, parallelism: 4 },
  'owasp-minimum': { memoryCost: 19_456, timeCost: 2, parallelism: 1 },
};

/**
 * The parameters new hashes are made with. The server's start and every command hand the
 * configured setting over (`usePasswordHashCost`) before any password is hashed; a process that
 * never did (a test calling these functions directly) reads the environment once.
 */
let parameters: (typeof PARAMETERS)[PasswordHashCost] | null = null;
let decoy: Promise<string> | null = null;

/** Make new hashes at `cost` from now on (TILTH_PASSWORD_HASH, read and checked by config.ts). */
export function usePasswordHashCost(cost: PasswordHashCost): void {
  if (parameters === PARAMETERS[cost]) return;
  parameters = PARAMETERS[cost];
  // The decoy for unknown names must cost what a real account's check costs.
  decoy = null;
}

function hashOptions(): HashOptions {
  parameters ??= PARAMETERS[passwordHashCost(readEnvironment())];
  return { type: argon2.argon2id, ...parameters };
}

/**
 * Whether `hash` was made with other parameters than new hashes are (an older setting of
 * TILTH_PASSWORD_HASH, or another program's): then it is made again at the next successful
 * sign-in, so that every account's check costs the same as the decoy's for unknown names, and a
 * stronger setting reaches the accounts that already exist.
 */
export function needsNewHash(hash: string): boolean {
  try {
    const { type: _type, ...wanted } = hashOptions();
    return argon2.needsRehash(hash, wanted);
  } catch {
    return false;
  }
}

/** Whether a password check would be taken now (or queued), rather than refused as busy. */
export function hashingOpen(): boolean {
  return turns.open;
}

/** Hash a password; throws HashingBusy when too many are being hashed. */
export function hashPassword(password: string): Promise<string> {
  return turns.run(() => argon2.hash(password, hashOptions()));
}

/* `decoy` (above): a hash to verify against when the user does not exist, so that timing does not reveal which names exist. */

/** Whether `password` matches `hash` (a decoy check when there is none); throws HashingBusy when too many are being checked. */
export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (!hash) {
    decoy ??= argon2.hash('decoy password that never matches', hashOptions());
    const against = await decoy;
    await turns.run(() => argon2.verify(against, password).catch(() => false));
    return false;
  }
  return turns.run(() => argon2.verify(hash, password).catch(() => false));
}

/** A password made for someone who gave none (the first administrator, `tilth user`): 96 random bits, shown once. */
export function generatePassword(): string {
  return randomBytes(12).toString('base64url');
}
