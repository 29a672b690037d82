/**
 * What `tilth import farmos` tells a person while it works: on a terminal, one line per phase
 * rewritten in place (records, bytes, rates and, when the phase's size is known, the time left);
 * the same fields in each --json progress line; otherwise (a pipe, a log file) or with --json, plain
 * lines, one per page, that a script can follow. And the summary table at the end.
 */
import type { Writable } from 'node:stream';

export interface BundleCounts {
  type: string;
  /** Records read from the source this run: all of them the first time, then those changed at the source since the last run. */
  read: number;
  created: number;
  updated: number;
  unchanged: number;
  failed: number;
}

export interface Progress {
  /** A phase (users, taxonomy terms, files…) begins; `expected`: about how many records it has, when known (for the time left). */
  phase(name: string, expected?: number | null): void;
  /** Records (and bytes) done so far in the phase. */
  advance(records: number, bytes?: number): void;
  /** A phase ends. */
  done(): void;
  /** A line of its own (a record that failed, a note). */
  note(line: string, fields?: Record<string, unknown>): void;
}

/** How a run reports its progress on `out`: JSON lines (`json`), else a line redrawn on a terminal, else plain lines. */
export function progressFor(out: Writable & { isTTY?: boolean }, { json }: { json: boolean }): Progress {
  if (json) return new JsonLines(out);
  return out.isTTY ? new TerminalLine(out) : new PlainLines(out);
}

/** An escape sequence: CSI (`ESC [ … final`), OSC and the like (`ESC ] … BEL or ESC \\`), or ESC and one character. */
const ESCAPE_SEQUENCE = /\x1b(?:\[[0-?]*[ -/]*[@-~]?|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[\s\S]?)/g;
/** C0 and C1 control characters, DEL among them. */
const CONTROL = /[\x00-\x1f\x7f-\x9f]/g;

/**
 * Text from the source (a name, an error's detail) as it may reach a terminal: its escape
 * sequences removed and its other control characters (line breaks, carriage returns among them)
 * made spaces, so that it can neither move the cursor, nor redraw a line, nor begin a line of its
 * own (a fake "Verified" one). JSON output needs none of this: JSON.stringify escapes it.
 */
export function printable(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, '').replace(CONTROL, ' ');
}

const rate = (n: number, ms: number) => (ms > 0 ? Math.round((n * 1000) / ms) : 0);
const mb = (bytes: number) => (bytes / 1_048_576).toFixed(1);

/** Seconds as a person reads a time left: 45 s, 3 min 20 s, 1 h 5 min. */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Where a phase is: what is done, how fast, and (when its size is known) about how long is left. */
export interface Status {
  phase: string;
  records: number;
  /** About how many records the phase has, or null when the source does not say. */
  expected: number | null;
  bytes: number;
  ms: number;
  /** Records a second so far. */
  rate: number;
  /** Bytes a second so far. */
  bytesRate: number;
  /** Seconds left at the rate so far, or null when the phase's size is not known (or nothing is done yet). */
  etaSeconds: number | null;
}

abstract class Counting implements Progress {
  protected name = '';
  protected records = 0;
  protected expected: number | null = null;
  protected bytes = 0;
  protected started = Date.now();
  constructor(protected readonly out: Writable) {}
  phase(name: string, expected: number | null = null): void {
    this.name = name;
    this.records = 0;
    this.bytes = 0;
    this.expected = expected;
    this.started = Date.now();
  }
  advance(records: number, bytes = 0): void {
    this.records += records;
    this.bytes += bytes;
    this.show();
  }
  protected status(): Status {
    const ms = Date.now() - this.started;
    const perMs = ms > 0 ? this.records / ms : 0;
    // An estimate from the source's numbering can be passed (records deleted there leave gaps): then nearly done.
    const expected = this.expected === null ? null : Math.max(this.expected, this.records);
    const etaSeconds = expected === null || perMs <= 0 ? null : Math.round((expected - this.records) / perMs / 1000);
    return {
      phase: this.name,
      records: this.records,
      expected,
      bytes: this.bytes,
      ms,
      rate: rate(this.records, ms),
      bytesRate: rate(this.bytes, ms),
      etaSeconds,
    };
  }
  /** The phase's line; `final`, once it is done: no time left. */
  protected line({ final = false }: { final?: boolean } = {}): string {
    const s = this.status();
    const of = s.expected !== null ? ` of about ${s.expected}` : '';
    const bytes = s.bytes ? `, ${mb(s.bytes)} MB (${mb(s.bytesRate)} MB/s)` : '';
    const left = s.etaSeconds !== null && !final ? `, about ${duration(s.etaSeconds)} left` : '';
    return `${s.phase}: ${s.records}${of} records${bytes}, ${s.rate}/s, ${(s.ms / 1000).toFixed(1)} s${left}`;
  }
  protected abstract show(): void;
  abstract done(): void;
  abstract note(line: string, fields?: Record<string, unknown>): void;
}

class TerminalLine extends Counting {
  private last = 0;
  protected show(): void {
    // At most ten redraws a second: a fast phase must not spend its time drawing.
    if (Date.now() - this.last < 100) return;
    this.last = Date.now();
    this.out.write(`\r\x1b[2K${this.line()}`);
  }
  done(): void {
    this.out.write(`\r\x1b[2K${this.line({ final: true })}\n`);
  }
  note(line: string): void {
    this.out.write(`\r\x1b[2K${printable(line)}\n`);
  }
}

class PlainLines extends Counting {
  protected show(): void {
    this.out.write(`${this.line()}\n`);
  }
  done(): void {
    this.out.write(`${this.line({ final: true })} (done)\n`);
  }
  note(line: string): void {
    this.out.write(`${printable(line)}\n`);
  }
}

class JsonLines extends Counting {
  protected show(): void {
    this.out.write(`${JSON.stringify({ event: 'progress', ...this.status() })}\n`);
  }
  done(): void {
    this.out.write(`${JSON.stringify({ event: 'phase_done', ...this.status(), etaSeconds: 0 })}\n`);
  }
  note(line: string, fields: Record<string, unknown> = {}): void {
    this.out.write(`${JSON.stringify({ event: 'note', message: line, ...fields })}\n`);
  }
}

/** The counts of data stream readings (`type: 'readings'`): by data stream, not by record. */
export const READINGS_COUNTS = 'readings';
/** Their name in the table and the progress lines, which say the unit. */
export const READINGS_BY_STREAM = 'readings (streams)';

/**
 * The summary: per bundle, what the source has and what this run did with it, and the total of
 * records (the summary sentence's numbers). The readings, counted by data stream, come after the
 * total: added to it, a stream would count twice.
 */
export function summaryTable(rows: readonly BundleCounts[]): string {
  const head = ['bundle', 'read', 'created', 'updated', 'unchanged', 'failed'];
  // Bundles the source has none of, and this run did nothing with, are left out.
  const cells = (r: BundleCounts) =>
    [r.type === READINGS_COUNTS ? READINGS_BY_STREAM : r.type, r.read, r.created, r.updated, r.unchanged, r.failed].map(
      String,
    );
  const shown = rows.filter((r) => r.read || r.created || r.updated || r.failed);
  const body = shown.filter((r) => r.type !== READINGS_COUNTS).map(cells);
  const readings = shown.filter((r) => r.type === READINGS_COUNTS).map(cells);
  const total = ['total', ...[1, 2, 3, 4, 5].map((i) => String(body.reduce((n, r) => n + Number(r[i]), 0)))];
  const all = [head, ...body, total, ...readings];
  const widths = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const fmt = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [
    fmt(head),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...body.map(fmt),
    fmt(total),
    ...readings.map(fmt),
  ].join('\n');
}
