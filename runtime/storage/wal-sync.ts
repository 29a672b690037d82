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
 *   and Linux reports such an error once. Every later write fails too, until the server restarts
 *   and SQLite recovers from what the log really holds (as PostgreSQL stops on a failed fsync).
 */
import { Worker } from 'node:worker_threads';

/** The worker: plain JavaScript, evaluated as a script (no TypeScript loader in a worker). */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
let wal = null;
/** The log's descriptor; opened again when the file at its path is another one (recreated). */
function walDescriptor() {
  let now;
  try { now = fs.statSync(workerData.wal); } catch (e) { if (e.code === 'ENOENT') return null; throw e; }
  if (wal && wal.ino === now.ino && wal.dev === now.dev) return wal.fd;
  if (wal) fs.closeSync(wal.fd);
  wal = null;
  const fd = fs.openSync(workerData.wal, 'r');
  const st = fs.fstatSync(fd);
  wal = { fd, ino: st.ino, dev: st.dev };
  // A log file made since the last sync: its name in the directory must reach the disk too.
  const dir = fs.openSync(workerData.dir, 'r');
  try { fs.fsyncSync(dir); } finally { fs.closeSync(dir); }
  return fd;
}
parentPort.on('message', () => {
  try {
    const fd = walDescriptor();
    if (fd !== null) fs.fdatasyncSync(fd);
    else {
      // No log file (not in WAL mode): what was committed is in the database file.
      const db = fs.openSync(workerData.db, 'r');
      try { fs.fdatasyncSync(db); } finally { fs.closeSync(db); }
    }
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

/** A failed sync: nothing committed since the last good one is known to be on disk. */
export class WalSyncFailed extends Error {
  readonly code = 'SQLITE_IOERR_FSYNC';
  constructor(cause: { message: string; code?: string }) {
    super(`Writing the database's log to disk failed (${cause.code ?? 'error'}: ${cause.message}). Nothing written since can be trusted to be on disk; restart Tilth after checking the disk.`);
  }
}

export class WalSync {
  private worker: Worker | null = null;
  /** The sync running now, and the one that will follow it for those who asked meanwhile. */
  private running: Waiter | null = null;
  private next: Waiter | null = null;
  private failed: WalSyncFailed | null = null;
  private startedAt = 0;
  /** Syncs finished, and the seconds they took (the metrics). */
  count = 0;
  seconds = 0;

  /** @param file the SQLite database file; its log is `file-wal` beside it. */
  constructor(
    private readonly file: string,
    private readonly dir: string,
  ) {}

  /** Resolves once everything committed before the call is on disk. */
  sync(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    // A sync already running may have begun before the caller's COMMIT: the caller needs the next.
    if (this.running) return (this.next ??= waiter()).promise;
    this.running = waiter();
    const { promise } = this.running;
    this.start();
    return promise;
  }

  close(): void {
    const error = new Error('The database was closed.');
    for (const w of [this.running, this.next]) w?.reject(error);
    this.running = this.next = null;
    void this.worker?.terminate();
    this.worker = null;
  }

  private start(): void {
    this.startedAt = performance.now();
    const worker = this.spawn();
    worker.ref();
    worker.postMessage(null);
  }

  private spawn(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER, { eval: true, workerData: { wal: `${this.file}-wal`, db: this.file, dir: this.dir } });
    worker.on('message', (error: { message: string; code?: string } | null) => this.finished(error));
    worker.on('error', (error) => {
      this.worker = null;
      if (this.running) this.finished({ message: error.message, code: 'worker' });
    });
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private finished(error: { message: string; code?: string } | null): void {
    this.worker?.unref();
    this.count++;
    this.seconds += (performance.now() - this.startedAt) / 1000;
    const done = this.running;
    this.running = null;
    if (error) {
      this.failed = new WalSyncFailed(error);
      for (const w of [done, this.next]) w?.reject(this.failed);
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
