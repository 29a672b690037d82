/**
 * Answers read from the database, kept while nothing has changed it. On SQLite every `get` asks
 * whether any connection has committed since the last one (`changeCounter`: one read of the
 * write-ahead log's index, a fraction of a statement's cost); if one has, whatever it changed (by
 * this server, a `tilth` command or a second server on the same file) empties the cache before
 * the key is looked up, so a change takes effect on the next request exactly as without a cache.
 * PostgreSQL has no such cheap signal: there nothing is kept and every request reads afresh.
 */
import type { Db } from './records.ts';
import { changeCounter } from './sql.ts';

export class ChangeCache<V> {
  private readonly kept = new Map<string, V>();
  private version: number | undefined;

  /** At most `limit` answers are kept; the oldest go first (keys may come from clients). */
  constructor(private readonly limit: number) {}

  /**
   * The database's change counter now (emptying the cache if it moved), and the answer kept for
   * `key`; no version where the database gives no such signal.
   */
  get(db: Db, key: string): { version?: number; kept?: V } {
    const version = changeCounter(db);
    if (version === undefined) return {};
    if (version !== this.version) {
      this.kept.clear();
      this.version = version;
    }
    return { version, kept: this.kept.get(key) };
  }

  /**
   * Keep what was read after `get` returned `version`: the read saw that version or a later one,
   * and a later one empties the cache at the next `get`. If another request saw a later version
   * meanwhile, this read may predate it and is not kept.
   */
  set(key: string, value: V, version: number | undefined): void {
    if (version === undefined || version !== this.version) return;
    if (this.kept.size >= this.limit) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(key, value);
  }
}
