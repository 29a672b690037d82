/**
 * Durable commits without stopping the server. With SQLite's `synchronous=FULL` a COMMIT calls
 * fsync on the write-ahead log, and better-sqlite3 runs it on the event loop's thread: for those
 * milliseconds (0.7–4 ms on the machines measured) nothing is answered, not even a read. So the
 * writer runs `synchronous=NORMAL` (SQLite writes the log but does not sync it at COMMIT, and stays
 * safe from corruption: config.ts) and this class syncs the log from its own thread; a write is
 * acknowledged only once the sync that followed its COMMIT has finished. What was promised still
 * holds: an acknowledged write is on disk.
 *
 * - One sync covers every COMMIT before it, so the writes that commit while one runs share the
 *   next one (group commit's batches: storage/group-commit.ts).
 * - The sync runs in a worker thread of its own, not in libuv's pool, where a queue of password
 *   hashes (argon2, four threads) would hold it up.
 * - A committed write is visible to reads for the moment between its COMMIT and its sync. Only a
 *   crash of the machine (not of the server) in that moment would take back what a read saw.
 * - Checkpoints (copying the log's pages into the database file, and syncing both) run in the
 *   same thread, at most every CHECKPOINT_EVERY_MS while writes come. SQLite would otherwise run
 *   one inside a COMMIT every thousand pages, on the event loop: 2–30 ms each under a stream of
 *   writes here, 45 % of all COMMIT time. Group commit starts no batch while one runs (reads go
 *   on): the log must be wholly copied when the writer next begins, or SQLite never starts it
 *   afresh and it grows (to 80 MB in ten seconds of POSTs, when batches ran alongside). The
 *   writer's own checkpoints stay as a safety net for a log that grows past
 *   WRITER_CHECKPOINT_PAGES (this thread stuck or gone: database.ts).
 * - When a sync fails (EIO: the disk is failing), what was written is not known to be on disk,
 *   and Linux reports such an error once. Every later write is refused before it begins, until
 *   the server restarts and SQLite recovers from what the log really holds (as PostgreSQL stops
 *   on a failed fsync). The writes that were waiting for that sync were committed: they are
 *   answered 500, and a read may show them.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** The least time between two checkpoints of the worker. */
const CHECKPOINT_EVERY_MS = 100;
/** The longest a write waits for a checkpoint (only an optimisation) before it goes on without. */
const CHECKPOINT_WAIT_MS = 500;
/** The longest closing waits for the worker to close its connection before ending it. */
const CLOSE_WAIT_MS = 2000;
/** The writer checkpoints itself only when the log has grown this long (SQLite's default: 1,000). */
export const WRITER_CHECKPOINT_PAGES = 20_000;

/** The worker: plain JavaScript, evaluated as a script (no TypeScript loader in a worker). */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
let wal = null;
let db = null;
/**
 * The log's descriptor. SQLite keeps the log beside the real database file, so a symlinked
 * database's log is found through its real path. Opened again when the file at that path is
 * another one (recreated). A database in WAL mode that has committed has a log: none is an error.
 */
function walDescriptor() {
  const file = (wal && wal.file) || fs.realpathSync(workerData.db) + '-wal';
  let now;
  try { now = fs.statSync(file); } catch (e) { wal = null; throw e; }
  if (wal && wal.ino === now.ino && wal.dev === now.dev) return wal.fd;
  if (wal) fs.closeSync(wal.fd);
  wal = null;
  const fd = fs.openSync(file, 'r');
  const st = fs.fstatSync(fd);
  wal = { fd, file, ino: st.ino, dev: st.dev };
  // A log file made since the last sync: its name in the directory must reach the disk too.
  const dir = fs.openSync(path.dirname(file), 'r');
  try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
  return fd;
}
/**
 * Copy the log's pages into the database file (PASSIVE: it waits for no reader or writer, and
 * copies what none of them still needs), through a connection of this thread's own. A failure
 * is left to the next one, or to the writer's own checkpoints.
 */
function checkpoint() {
  try {
    if (!db) {
      const Database = require(workerData.driver);
      // Never wait for another process's lock (PASSIVE copies what it can and leaves the rest),
      // and sync the database file before a checkpoint counts as done, whatever the build's default.
      db = new Database(workerData.db, { fileMustExist: true, timeout: 0 });
      db.pragma('synchronous = NORMAL');
    }
    const [row] = db.pragma('wal_checkpoint(PASSIVE)');
    return { complete: row.busy === 0 && row.checkpointed === row.log };
  } catch (e) {
    if (db) { try { db.close(); } catch {} db = null; }
    return { failed: String(e && e.message) };
  }
}
parentPort.on('message', (message) => {
  if (message === 'close') {
    if (db) db.close();
    parentPort.close();
    return;
  }
  if (message === 'checkpoint') {
    parentPort.postMessage({ checkpointed: checkpoint() });
    return;
  }
  try {
    fs.fdatasyncSync(walDescriptor());
    parentPort.postMessage({ error: null });
  } catch (e) {
    parentPort.postMessage({ error: { message: String(e && e.message), code: e && e.code } });
  }
});
`;

/** better-sqlite3, as the worker loads it (by path: an eval'd worker resolves from the working directory). */
const DRIVER = createRequire(import.meta.url).resolve('better-sqlite3');

interface Waiter {
  promise: Promise<void>;
  resolve(): void;
  reject(error: Error): void;
}

interface Cause {
  message: string;
  code?: string;
}

/**
 * A failed sync: nothing committed since the last good one is known to be on disk. Each caller
 * gets an error of its own (Knex writes the failed statement into the message of the error it
 * is given, and one shared object would gather every request's SQL and values).
 */
export class WalSyncFailed extends Error {
  readonly code = 'SQLITE_IOERR_FSYNC';
  constructor(cause: Cause) {
    super(
      `Writing the database's log to disk failed (${cause.code ?? 'error'}: ${cause.message}). Nothing written since can be trusted to be on disk; restart Tilth after checking the disk.`,
    );
  }
}

export class WalSync {
  private worker: Worker | null = null;
  /** The sync running now, and the one that will follow it for those who asked meanwhile. */
  private running: Waiter | null = null;
  private next: Waiter | null = null;
  private cause: Cause | null = null;
  private startedAt = 0;
  private closed = false;
  /** When the last checkpoint was asked for; syncs asked for since (so, commits since). */
  private lastCheckpoint = 0;
  private syncsSince = 0;
  /** The checkpoint running now, settled when the worker answers. */
  private checkpointing: { promise: Promise<void>; resolve(): void } | null = null;
  /**
   * Syncs finished and the seconds they took; checkpoints that copied the whole log, and ones
   * that failed (the metrics). A failure leaves the log to the writer's own checkpoints.
   */
  count = 0;
  seconds = 0;
  checkpoints = 0;
  checkpointFailures = 0;

  /** @param file the SQLite database file; its log is `file-wal` beside its real path. */
  constructor(private readonly file: string) {}

  /** Set once a sync has failed: writes are refused before they begin, until a restart. */
  failure(): WalSyncFailed | null {
    return this.cause ? new WalSyncFailed(this.cause) : null;
  }

  /**
   * A checkpoint, when one is due (CHECKPOINT_EVERY_MS since the last, and commits since):
   * resolves when it is done, after any sync asked for before it. Never rejects: a failed one is
   * left to the next, or to the writer's own. Undefined when none is due.
   */
  checkpoint(): Promise<void> | undefined {
    if (this.checkpointing) return this.checkpointing.promise;
    if (
      this.cause ||
      this.closed ||
      !this.worker ||
      this.syncsSince === 0 ||
      performance.now() - this.lastCheckpoint < CHECKPOINT_EVERY_MS
    )
      return undefined;
    this.lastCheckpoint = performance.now();
    this.syncsSince = 0;
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    this.checkpointing = { promise, resolve };
    this.worker.ref();
    this.worker.postMessage('checkpoint');
    return promise;
  }

  /**
   * The checkpoint running now, if any, bounded by CHECKPOINT_WAIT_MS: a write begins after it,
   * so that the log it copied wholly is started afresh (and a stuck one holds nothing up long).
   */
  checkpointRunning(): Promise<void> | undefined {
    const running = this.checkpointing?.promise;
    if (!running) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, CHECKPOINT_WAIT_MS)));
    return Promise.race([running, limit]).finally(() => clearTimeout(timer));
  }

  /** Resolves once everything committed before the call is on disk. */
  sync(): Promise<void> {
    if (this.cause) return Promise.reject(new WalSyncFailed(this.cause));
    if (this.closed) return Promise.reject(new Error('The database was closed.'));
    this.syncsSince++;
    // A sync already running may have begun before the caller's COMMIT: the caller needs the next.
    if (this.running) return (this.next ??= waiter()).promise;
    this.running = waiter();
    const { promise } = this.running;
    this.start();
    return promise;
  }

  /** Refuse further syncs; resolves once the worker has closed its connection and ended. */
  close(): Promise<void> {
    this.closed = true;
    const error = new Error('The database was closed.');
    for (const w of [this.running, this.next]) w?.reject(error);
    this.running = this.next = null;
    this.checkpointing?.resolve();
    this.checkpointing = null;
    const worker = this.worker;
    this.worker = null;
    if (!worker) return Promise.resolve();
    // The worker closes its connection and ends; a sync it is running finishes first. Its
    // connection must be closed before the server's last one is, which then checkpoints the
    // whole log into the database file and removes it, as a stopped server always has.
    return new Promise((resolve) => {
      // A worker stuck in a sync (a hung disk) is ended after CLOSE_WAIT_MS.
      const timer = setTimeout(() => void worker.terminate(), CLOSE_WAIT_MS);
      worker.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      worker.ref();
      worker.postMessage('close');
    });
  }

  private start(): void {
    this.startedAt = performance.now();
    try {
      const worker = this.spawn();
      worker.ref();
      worker.postMessage('sync');
    } catch (error) {
      // The worker could not start (no threads or descriptors left): not known to be on disk.
      this.finished({ message: (error as Error).message, code: (error as { code?: string }).code ?? 'worker' });
    }
  }

  private spawn(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER, { eval: true, workerData: { db: this.file, driver: DRIVER } });
    // Only the current worker's events count: one terminated by close() may still report.
    const current = () => this.worker === worker;
    worker.on(
      'message',
      (message: { error?: Cause | null; checkpointed?: { complete?: boolean; failed?: string } }) => {
        if (!current()) return;
        if (message.checkpointed) this.checkpointed(message.checkpointed);
        else this.finished(message.error ?? null);
      },
    );
    const lost = (message: string) => {
      if (!current()) return;
      this.worker = null;
      if (this.checkpointing) this.checkpointed({ failed: message });
      if (this.running) this.finished({ message, code: 'worker' });
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`the sync thread exited (${code})`));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private checkpointed(outcome: { complete?: boolean; failed?: string }): void {
    if (outcome.complete) this.checkpoints++;
    if (outcome.failed !== undefined) this.checkpointFailures++;
    const waiting = this.checkpointing;
    this.checkpointing = null;
    if (!this.running) this.worker?.unref();
    waiting?.resolve();
  }

  private finished(error: Cause | null): void {
    if (!this.checkpointing) this.worker?.unref();
    this.count++;
    this.seconds += (performance.now() - this.startedAt) / 1000;
    const done = this.running;
    this.running = null;
    if (error) {
      this.cause = error;
      for (const w of [done, this.next]) w?.reject(new WalSyncFailed(error));
      this.next = null;
      return;
    }
    done?.resolve();
    if (this.next) {
      this.running = this.next;
      this.next = null;
      this.start();
    }
  }
}

function waiter(): Waiter {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A waiter nobody awaits (closed before anyone asked) must not be an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}
