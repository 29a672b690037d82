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
 * - When a sync fails (EIO: the disk is failing), what was written is not known to be on disk,
 *   and Linux reports such an error once. Every later write is refused before it begins, until
 *   the server restarts and SQLite recovers from what the log really holds (as PostgreSQL stops
 *   on a failed fsync). The writes that were waiting for that sync were committed: they are
 *   answered 500, and a read may show them.
 */
import { Worker } from 'node:worker_threads';

/** The worker: plain JavaScript, evaluated as a script (no TypeScript loader in a worker). */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const path = require('node:path');
let wal = null;
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
parentPort.on('message', () => {
  try {
    fs.fdatasyncSync(walDescriptor());
    parentPort.postMessage(null);
  } catch (e) {
    parentPort.postMessage({ message: String(e && e.message), code: e && e.code });
  }
});
`;

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
    super(`Writing the database's log to disk failed (${cause.code ?? 'error'}: ${cause.message}). Nothing written since can be trusted to be on disk; restart Tilth after checking the disk.`);
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
  /** Syncs finished, and the seconds they took (the metrics). */
  count = 0;
  seconds = 0;

  /** @param file the SQLite database file; its log is `file-wal` beside its real path. */
  constructor(private readonly file: string) {}

  /** Set once a sync has failed: writes are refused before they begin, until a restart. */
  failure(): WalSyncFailed | null {
    return this.cause ? new WalSyncFailed(this.cause) : null;
  }

  /** Resolves once everything committed before the call is on disk. */
  sync(): Promise<void> {
    if (this.cause) return Promise.reject(new WalSyncFailed(this.cause));
    if (this.closed) return Promise.reject(new Error('The database was closed.'));
    // A sync already running may have begun before the caller's COMMIT: the caller needs the next.
    if (this.running) return (this.next ??= waiter()).promise;
    this.running = waiter();
    const { promise } = this.running;
    this.start();
    return promise;
  }

  close(): void {
    this.closed = true;
    const error = new Error('The database was closed.');
    for (const w of [this.running, this.next]) w?.reject(error);
    this.running = this.next = null;
    const worker = this.worker;
    this.worker = null;
    void worker?.terminate();
  }

  private start(): void {
    this.startedAt = performance.now();
    try {
      const worker = this.spawn();
      worker.ref();
      worker.postMessage(null);
    } catch (error) {
      // The worker could not start (no threads or descriptors left): not known to be on disk.
      this.finished({ message: (error as Error).message, code: (error as { code?: string }).code ?? 'worker' });
    }
  }

  private spawn(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER, { eval: true, workerData: { db: this.file } });
    // Only the current worker's events count: one terminated by close() may still report.
    const current = () => this.worker === worker;
    worker.on('message', (error: Cause | null) => current() && this.finished(error));
    const lost = (message: string) => {
      if (!current()) return;
      this.worker = null;
      if (this.running) this.finished({ message, code: 'worker' });
    };
    worker.on('error', (error) => lost(error.message));
    worker.on('exit', (code) => lost(`the sync thread exited (${code})`));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private finished(error: Cause | null): void {
    this.worker?.unref();
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
