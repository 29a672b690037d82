/**
 * Group commit for SQLite. With `synchronous=FULL` every COMMIT waits for the write-ahead log to
 * reach the disk (0.7–2 ms here), and SQLite has one writer, so writes sent together used to queue
 * for the connection and sync one by one. Here the write transactions that are already waiting
 * when one starts run in the same SQLite transaction, each in its own savepoint, and share its
 * COMMIT:
 *
 * - a write that fails is rolled back to its savepoint (the first of a batch, which runs without
 *   one, with the whole transaction): it leaves no trace and undoes nobody else's work, and its
 *   caller gets its own error;
 * - a write that succeeds is answered only after the shared COMMIT, so every acknowledged write
 *   is on disk as before; if that COMMIT fails, every write that shared it fails with it;
 * - writes run one after another, each seeing the ones before it, as they did queued for the
 *   connection (the batch is serial, so it is equivalent to running them in that order).
 *
 * Nothing waits for writes to arrive. While writes come together (several waiting, the last
 * batch had several, or the first came within BACK_TO_BACK_MS of the last COMMIT), the batch lets
 * the event loop poll once after each write, so that requests that have already arrived are read
 * up to their own transaction, and commits when none has joined; a lone write commits at once. So
 * a transaction never stays open waiting on the network. A batch takes no more writes after
 * MAX_WRITES, or once MAX_BATCH_MS have passed since it began; a write's answer still waits for
 * the writes taken before that, so one long write (a large import)
 * delays the answers of the writes that shared its batch.
 *
 * The batch's transaction begins IMMEDIATE (the database's writer from the start: storage/
 * database.ts): a deferred one would take its read snapshot at the first write's first read, and
 * if a command run beside the server committed meanwhile, every later write of the batch would
 * fail (SQLITE_BUSY_SNAPSHOT) where on its own it would have succeeded.
 *
 * A body must not call `trx.commit()` or `trx.rollback()` itself (none does): every write of a
 * batch is given the batch's own transaction (the later ones inside a savepoint), so that call
 * would end the batch under the writes after it. Return, or throw, instead. And a body awaits
 * every statement it starts before it settles: its savepoint ends the moment it does, so a
 * statement still pending then would run in the batch outside it (kept though the write
 * failed, or inside the next write's savepoint). Writes reach a batch through the database's own
 * door (storage/transactions.ts `write`, `Database.write`); `knex.transaction` is Knex's own,
 * unchanged, and runs as a transaction of its own, outside the batches.
 *
 * A write waits in the queue for at most QUEUE_TIMEOUT_MS (Knex's own wait for its one
 * connection), then fails with WriteQueueTimeout (a 503): a write that never ends holds up the
 * others for that long, not for ever.
 */
import type { Knex } from 'knex';

/**
 * How a batch makes its COMMIT durable when the database syncs off the event loop (wal-sync.ts):
 * the COMMIT itself does not wait, the batch's answers do, and the next batch runs meanwhile.
 */
export interface Durability {
  /** This batch's COMMIT does not wait for the disk itself (the batch waits after it). */
  defer(transaction: Knex.Transaction): void;
  /** Resolves once every COMMIT before the call is on disk. */
  sync(): Promise<void>;
  /** Set when the disk failed: writes are refused before they begin. */
  failure(): Error | null;
  /**
   * Start a checkpoint if one is due; the one running, if any, for the next batch to let finish
   * (bounded: it is only an optimisation). wal-sync.ts.
   */
  checkpoint(): Promise<void> | undefined;
}

/** A transaction's body, as Knex's `transaction(container)` takes it. */
type Container = (trx: Knex.Transaction) => unknown;
/** Starts a top-level Knex transaction (BEGIN … COMMIT) around `container`. */
type Begin = (container: (outer: Knex.Transaction) => Promise<void>) => PromiseLike<unknown>;

/**
 * A savepoint on the batch's connection: begun, released, or rolled back to (and released).
 * Statements run on the connection directly (database.ts), under one fixed name: the batch's
 * writes run one after another, so only one of these is open at a time, and its three
 * statements are prepared once for the life of the connection. A Knex nested transaction for
 * each write instead built a new Knex instance and a new savepoint name (a statement prepared
 * afresh) per write.
 */
export interface Savepoints {
  begin(outer: Knex.Transaction): void;
  release(outer: Knex.Transaction): void;
  rollback(outer: Knex.Transaction): void;
}

interface Write {
  container: Container;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout;
  /** performance.now() when it was queued. */
  arrived: number;
}

/** How a write ended: its result (`ok`), or the error it is refused with. */
type Outcome = { ok: boolean; value: unknown };

const MAX_WRITES = 16;
const MAX_BATCH_MS = 10;
const QUEUE_TIMEOUT_MS = 60_000;
/** A write queued this soon after the last batch ended means writes are coming back to back. */
const BACK_TO_BACK_MS = 10;

/** A write that waited too long for the writes before it (db-errors.ts answers 503, retry later). */
export class WriteQueueTimeout extends Error {
  constructor() {
    super(`The write waited more than ${QUEUE_TIMEOUT_MS / 1000} s for the writes before it.`);
  }
}

/** A failed write of a batch whose work could not be undone: the batch fails with it. */
class BatchBroken extends Error {
  constructor(cause: unknown) {
    super(`A failed write could not be undone: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

export class GroupCommit {
  private readonly waiting: Write[] = [];
  private running = false;
  private closedWith: Error | null = null;
  private lastCommitted = -Infinity;
  private lastBatchSize = 0;

  constructor(
    private readonly begin: Begin,
    private readonly savepoints: Savepoints,
    private readonly durability?: Durability,
  ) {}

  /** Writes waiting for a batch (the metrics' pending connections). */
  get queued(): number {
    return this.waiting.length;
  }

  /** Run `container` in a transaction; settles after its commit (shared with the writes around it). */
  run(container: Container): Promise<unknown> {
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise((resolve, reject) => {
      const write: Write = {
        container,
        resolve,
        reject,
        arrived: performance.now(),
        timer: setTimeout(() => this.expire(write), QUEUE_TIMEOUT_MS).unref(),
      };
      this.waiting.push(write);
      if (!this.running) void this.drain();
    });
  }

  /** Refuse every waiting write and every later one (the database is closing). */
  close(error: Error): void {
    this.closedWith = error;
    for (const write of this.waiting.splice(0)) this.settle(write, { ok: false, value: error });
  }

  private expire(write: Write): void {
    const at = this.waiting.indexOf(write);
    if (at < 0) return;
    this.waiting.splice(at, 1);
    write.reject(new WriteQueueTimeout());
  }

  /** The next waiting write, now out of the queue and its wait no longer timed. */
  private take(): Write | undefined {
    const write = this.waiting.shift();
    if (write) clearTimeout(write.timer);
    return write;
  }

  /** Answer a write: with its result when `ok`, else refused with `value` (its error). */
  private settle(write: Write, outcome: Outcome): void {
    clearTimeout(write.timer);
    (outcome.ok ? write.resolve : write.reject)(outcome.value);
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.waiting.length > 0) {
        // A checkpoint due or running is let finish first (reads go on meanwhile, and the writes
        // that arrive join the next batch): wal-sync.ts says why.
        const checkpoint = this.durability?.checkpoint();
        if (checkpoint) {
          await checkpoint;
          if (this.closedWith || this.waiting.length === 0) break;
        }
        await this.batch();
      }
      // Idle: a checkpoint due now runs before the next write comes rather than when it does.
      void this.durability?.checkpoint();
    } finally {
      this.running = false;
    }
  }

  /**
   * A later write of a batch, in a savepoint of its own: what it did is undone when it fails.
   * If it cannot be undone (the rollback itself failed), neither can the batch be trusted: the
   * error then fails the whole batch, which rolls everything back.
   */
  private async inSavepoint(
    outer: Knex.Transaction,
    container: Container,
    connection: { inTransaction: boolean },
  ): Promise<unknown> {
    this.savepoints.begin(outer);
    try {
      const value = await container(outer);
      this.savepoints.release(outer);
      return value;
    } catch (error) {
      // Unless SQLite has rolled back the whole transaction (the batch then fails: below).
      if (connection.inTransaction) {
        try {
          this.savepoints.rollback(outer);
        } catch (rollbackFailed) {
          throw new BatchBroken(rollbackFailed);
        }
      }
      throw error;
    }
  }

  private async batch(): Promise<void> {
    const done: Array<{ write: Write } & Outcome> = [];
    // Set when the transaction has settled. Knex runs the body even when BEGIN failed (and
    // rejects at once): such a body must take no write, or its caller would never hear back.
    let settled = false;
    let durable: Promise<void> | undefined;
    // The error that failed the batch from inside it. When SQLite rolled the whole transaction
    // back itself (a full disk), Knex's own ROLLBACK then fails ("no transaction is active"), and
    // the writes must hear why the batch failed, not that.
    let reason: unknown;
    const failure = this.durability?.failure();
    if (failure) {
      for (const write of this.waiting.splice(0)) this.settle(write, { ok: false, value: failure });
      return;
    }
    try {
      await this.begin(async (outer) => {
        const connection = (await outer.client.acquireConnection()) as { inTransaction: boolean };
        const usable = () => !settled && !outer.isCompleted() && connection.inTransaction;
        if (!usable()) throw new Error('The write transaction did not begin.');
        this.durability?.defer(outer);
        const started = performance.now();
        // Writes are coming together: several are waiting, or the last batch had several, or
        // this one came straight after the last COMMIT.
        const backToBack =
          this.waiting.length > 1 ||
          this.lastBatchSize > 1 ||
          (this.waiting[0]?.arrived ?? 0) - this.lastCommitted < BACK_TO_BACK_MS;
        while (done.length < MAX_WRITES && (done.length === 0 || performance.now() - started < MAX_BATCH_MS)) {
          // A transaction's statements run synchronously, so a write runs whole without letting
          // the event loop read the requests that arrived meanwhile: one more poll for I/O lets
          // those that are already here reach their own transaction and join this one. Only
          // while writes come back to back: a lone write (one person saving a log) need not wait.
          if (this.waiting.length === 0 && backToBack) await pollOnce();
          if (!usable()) break;
          const write = this.take();
          if (!write) break;
          // The first write runs in the transaction itself: alone in it, it needs no savepoint
          // (most writes are alone), and if it fails the whole transaction is rolled back.
          // Each later one runs in a savepoint: SAVEPOINT, then RELEASE, or ROLLBACK TO on
          // failure. Every body is given the batch's transaction (its statements run there).
          const first = done.length === 0;
          try {
            const value = first
              ? await write.container(outer)
              : await this.inSavepoint(outer, write.container, connection);
            done.push({ write, ok: true, value });
          } catch (error) {
            done.push({ write, ok: false, value: error });
            // Some failures (a full disk, an I/O error) make SQLite roll back the whole
            // transaction, and the writes before this one with it: the batch has failed. So has
            // it when a failed write's savepoint could not be rolled back.
            if (first || !connection.inTransaction || error instanceof BatchBroken) {
              reason = error;
              throw error;
            }
          }
        }
      });
      durable = this.durability?.sync();
    } catch (thrown) {
      const error = reason ?? thrown;
      // The first write failed and took the transaction with it (its own error is kept); or the
      // COMMIT failed, so no write of the batch was kept; or BEGIN did (another process held
      // the database past the busy timeout), before any write was taken: the writes waiting now
      // would meet the same, so they all get the error (a 503 to retry), at once.
      if (done.length === 0) {
        for (const write of this.waiting.splice(0)) done.push({ write, ok: false, value: error });
      }
      for (const d of done) {
        if (d.ok) Object.assign(d, { ok: false, value: error });
      }
    } finally {
      settled = true;
      this.lastCommitted = performance.now();
      this.lastBatchSize = done.length;
    }
    if (!durable) {
      for (const d of done) this.settle(d.write, d);
      return;
    }
    // Committed; the writes that failed are answered now, the others once the log is on disk
    // (or, if the sync fails, with its error). The next batch does not wait for this sync.
    for (const d of done) if (!d.ok) this.settle(d.write, d);
    durable.then(
      () => {
        for (const d of done) if (d.ok) this.settle(d.write, d);
      },
      (error: unknown) => {
        for (const d of done) if (d.ok) this.settle(d.write, { ok: false, value: error });
      },
    );
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
