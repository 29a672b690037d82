/**
 * Group commit for SQLite. With `synchronous=FULL` every COMMIT waits for the write-ahead log to
 * reach the disk (0.7–2 ms here), and SQLite has one writer, so writes sent together used to queue
 * for the connection and sync one by one. Here the write transactions that are already waiting
 * when one starts run in the same SQLite transaction, each in its own savepoint, and share its
 * COMMIT:
 *
 * - a write that fails is rolled back to its savepoint: it leaves no trace and undoes nobody
 *   else's work, and its caller gets its own error at once;
 * - a write that succeeds is answered only after the shared COMMIT, so every acknowledged write
 *   is on disk as before; if that COMMIT fails, every write that shared it fails with it;
 * - writes run one after another, each seeing the ones before it, as they did queued for the
 *   connection (the batch is serial, so it is equivalent to running them in that order).
 *
 * Nothing waits for writes to arrive: after each write the batch lets the event loop poll once,
 * so that requests that have already arrived are read up to their own transaction, and commits
 * when none has joined. So a transaction never stays open waiting on the network. A
 * batch stops taking writes after MAX_WRITES or MAX_BATCH_MS, so one write's answer waits for at
 * most that much of others' work.
 */
import type { Knex } from 'knex';

/** A transaction's body, as Knex's `transaction(container)` takes it. */
type Container = (trx: Knex.Transaction) => unknown;
/** Starts a top-level Knex transaction (BEGIN … COMMIT) around `container`. */
type Begin = (container: (outer: Knex.Transaction) => Promise<void>) => PromiseLike<unknown>;

interface Write {
  container: Container;
  config: object | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const MAX_WRITES = 16;
const MAX_BATCH_MS = 10;

export class GroupCommit {
  private readonly waiting: Write[] = [];
  private running = false;

  constructor(private readonly begin: Begin) {}

  /** Run `container` in a transaction; settles after its commit (shared with the writes around it). */
  run(container: Container, config: object | undefined): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ container, config, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) await this.batch();
    } finally {
      this.running = false;
    }
  }

  private async batch(): Promise<void> {
    const done: Array<{ write: Write; ok: boolean; value: unknown }> = [];
    try {
      await this.begin(async (outer) => {
        const connection = (await outer.client.acquireConnection()) as { inTransaction: boolean };
        const started = performance.now();
        while (done.length < MAX_WRITES && (done.length === 0 || performance.now() - started < MAX_BATCH_MS)) {
          // A transaction's statements run synchronously, so a write runs whole without letting
          // the event loop read the requests that arrived meanwhile: one more poll for I/O lets
          // those that are already here reach their own transaction and join this one.
          if (this.waiting.length === 0) await pollOnce();
          const write = this.waiting.shift();
          if (!write) break;
          try {
            // A nested Knex transaction: SAVEPOINT, then RELEASE, or ROLLBACK TO on failure.
            done.push({ write, ok: true, value: await outer.transaction(write.container as (trx: Knex.Transaction) => Promise<unknown>, write.config) });
          } catch (error) {
            done.push({ write, ok: false, value: error });
            // Some failures (a full disk, an I/O error) make SQLite roll back the whole
            // transaction, and the writes before this one with it: the batch has failed.
            if (!connection.inTransaction) throw error;
          }
        }
      });
    } catch (error) {
      // The COMMIT failed, so no write of the batch was kept; or BEGIN did, before any write was
      // taken: the first waiting one gets the error, so that a lasting failure cannot spin.
      if (done.length === 0 && this.waiting.length > 0) done.push({ write: this.waiting.shift()!, ok: false, value: error });
      for (const d of done) {
        if (d.ok) Object.assign(d, { ok: false, value: error });
      }
    }
    for (const { write, ok, value } of done) (ok ? write.resolve : write.reject)(value);
  }
}

/**
 * Resolves after the event loop has polled for I/O once more (without blocking: immediates are
 * pending). One setImmediate fires after the events of the current poll only; the second is queued
 * from the check phase, so it fires in the next turn, after that turn's poll has read whatever
 * arrived in the meantime.
 */
function pollOnce(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
