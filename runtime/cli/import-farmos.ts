/**
 * `tilth import farmos --url …`: move a whole farm in from a farmOS 2.x, 3.x or 4.x server or
 * another Tilth, resumably, and verify it (runtime/farmos-import/). Not to be confused with `tilth import
 * geo|csv` (cli/import.ts), which create new records from a file.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Command } from './command.ts';
import { requireOption, UsageError } from './command.ts';
import { withAppContext } from './database.ts';
import { ImportError } from '../imports/run.ts';
import { FarmSource, SourceError, type SourceAuth } from '../farmos-import/source.ts';
import { FarmImport, sourceTypes } from '../farmos-import/run.ts';
import { verifyFarm, type Difference } from '../farmos-import/verify.ts';
import { printable, progressFor, READINGS_COUNTS, summaryTable } from '../farmos-import/progress.ts';
import { loadConfig } from '../config.ts';
import { formatTimestamp } from '../values/timestamps.ts';

/** Read a password without echoing it (a terminal), or the first line of standard input (a pipe). */
async function promptPassword(): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    const rl = createInterface({ input });
    for await (const line of rl) {
      rl.close();
      return line;
    }
    return '';
  }
  process.stderr.write('Password at the source: ');
  input.setRawMode(true);
  input.resume();
  let typed = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      for (const ch of chunk.toString('utf8')) {
        if (ch === '\r' || ch === '\n') {
          input.setRawMode(false);
          input.pause();
          input.off('data', onData);
          process.stderr.write('\n');
          resolve(typed);
          return;
        }
        if (ch === '\u0003') {
          input.setRawMode(false);
          reject(new ImportError('Cancelled.'));
          return;
        }
        typed = ch === '\u007f' ? typed.slice(0, -1) : typed + ch;
      }
    };
    input.on('data', onData);
  });
}

/** The first line of a file holding a secret (a password, token or client secret: better than the command line, which `ps` shows). */
function secretFile(option: string, path: string): string {
  try {
    return readFileSync(path, 'utf8').split(/\r?\n/)[0]!;
  } catch (error) {
    throw new ImportError(`Cannot read --${option} ${path}: ${(error as NodeJS.ErrnoException).code}.`);
  }
}

async function authFrom(values: Record<string, unknown>): Promise<SourceAuth> {
  // A secret named by a file is read from it, as if given on the command line.
  for (const name of ['token', 'client-secret']) {
    const file = values[`${name}-file`];
    if (typeof file === 'string') {
      if (typeof values[name] === 'string') throw new UsageError(`Give --${name} or --${name}-file, not both.`);
      values[name] = secretFile(`${name}-file`, file);
    }
  }
  const given = ['token', 'client-secret', 'username'].filter((k) => typeof values[k] === 'string');
  if (given.length !== 1)
    throw new UsageError(
      'Sign in one way: --username (with --password-file or a prompt), --client-id with --client-secret, or --token.',
    );
  const scope = typeof values.scope === 'string' ? values.scope : undefined;
  if (typeof values.token === 'string') return { kind: 'token', token: values.token };
  if (typeof values['client-secret'] === 'string')
    return {
      kind: 'client',
      clientId: requireOption(values, 'client-id'),
      clientSecret: values['client-secret'],
      scope,
    };
  const password =
    typeof values['password-file'] === 'string'
      ? secretFile('password-file', values['password-file'])
      : await promptPassword();
  return {
    kind: 'password',
    username: values.username as string,
    password,
    clientId: typeof values['client-id'] === 'string' ? values['client-id'] : 'farm',
    scope,
  };
}

/** A difference as a person reads it: a timestamp field's values as dates (ISO 8601, UTC), as the API serves them, not Unix seconds; nothing the source said reaches the terminal raw. */
function describe(d: Difference, { timestamp }: { timestamp: boolean }): string {
  const show = (v: unknown) =>
    timestamp && typeof v === 'number' ? formatTimestamp(v) : typeof v === 'string' ? v : JSON.stringify(v);
  return printable(`${d.type} ${d.uuid} ${d.field}: source ${show(d.source)}, here ${show(d.here)}`);
}

/** A list of names from the source, for a line of the human-readable output. */
const names = (list: Iterable<string>) => [...list].map(printable).join(', ');

/** The summary sentence's part on readings, by data stream (none when no stream's readings were copied or failed). */
function readingsClause(streams: { copied: number; failed: number }): string {
  if (!streams.copied && !streams.failed) return '';
  const of = (n: number) => `${n} data stream${n === 1 ? '' : 's'}`;
  return `; the readings of ${of(streams.copied)} copied${streams.failed ? `, of ${of(streams.failed)} failed` : ''}`;
}

export const importFarmosCommand: Command = {
  name: ['import', 'farmos'],
  summary:
    'Move a whole farm in from a farmOS 2.x, 3.x or 4.x server (or another Tilth): resumable, idempotent, verified.',
  usage:
    'tilth import farmos --url URL (--username NAME [--password-file FILE] | --client-id ID --client-secret[-file] SECRET | --token[-file] TOKEN) [--revisions] [--prune] [--verify-only] [--no-verify] [--retries N] [--timeout SECONDS] [--json]',
  options: {
    url: {
      type: 'string',
      description: "the source farm's address, e.g. https://farm.example.org (its …/api address names it too)",
    },
    username: {
      type: 'string',
      description:
        'sign in with the password grant as this user (the password is prompted for, or read from --password-file)',
    },
    'password-file': { type: 'string', description: 'a file holding the password (its first line)' },
    'client-id': { type: 'string', description: 'the OAuth client (default for the password grant: farm)' },
    'client-secret': { type: 'string', description: "the client's secret: sign in with the client_credentials grant" },
    token: { type: 'string', description: 'an access token for the source' },
    'token-file': { type: 'string', description: 'a file holding the access token (its first line)' },
    'client-secret-file': { type: 'string', description: "a file holding the client's secret (its first line)" },
    scope: { type: 'string', description: 'the scope to ask for when signing in' },
    revisions: {
      type: 'boolean',
      description:
        "carry each record's past revisions too (a Tilth source serves them; farmOS does not): one more request per record",
    },
    prune: { type: 'boolean', description: 'delete records an earlier run copied and the source no longer has' },
    retries: {
      type: 'string',
      description:
        'attempts per request before a page or file counts as failed (default 5; waits 0.5 s, 1 s, 2 s… between)',
    },
    timeout: {
      type: 'string',
      description: 'seconds one request may take, its answer read whole, before the attempt fails (default 120)',
    },
    'verify-only': {
      type: 'boolean',
      description: 'copy nothing: compare the source with this farm and name what differs',
    },
    'no-verify': { type: 'boolean', description: 'skip the comparison at the end' },
    json: { type: 'boolean', description: 'progress and the summary as JSON lines on stdout' },
  } as Command['options'],
  async run(values) {
    const url = requireOption(values, 'url');
    const json = Boolean(values.json);
    const auth = await authFrom(values);
    const retries = values.retries === undefined ? 5 : Number(values.retries);
    if (!Number.isInteger(retries) || retries < 1 || retries > 20)
      throw new UsageError('--retries must be a whole number from 1 to 20.');
    const timeout = values.timeout === undefined ? 120 : Number(values.timeout);
    if (!Number.isFinite(timeout) || timeout <= 0 || timeout > 3600)
      throw new UsageError('--timeout must be a number of seconds above 0 and at most 3600.');
    // The cap on each JSON document read from the source; the rest of the configuration is read when the database opens.
    const maxDocumentBytes = loadConfig().importMaxDocumentBytes;
    const progress = progressFor(json ? process.stdout : process.stderr, { json });
    const say = (line: string, fields: Record<string, unknown>) =>
      process.stdout.write(json ? `${JSON.stringify(fields)}\n` : `${line}\n`);
    try {
      const source = new FarmSource(url, auth, { attempts: retries, timeoutMs: timeout * 1000, maxDocumentBytes });
      await source.signIn();
      return await withAppContext(async (ctx) => {
        const { supported, unsupported } = await sourceTypes(source, ctx);
        // Which farmOS the source says it runs, and so the shape its records are read in (shapes.ts).
        const { document, shape } = await source.entryPoint();
        const version = String(document.meta.farm.version);
        say(`Reading ${source.base} as ${shape.name} (its /api says version ${printable(version)}).`, {
          event: 'source',
          version,
          shape: shape.name,
        });
        let failed = 0;
        let userRemap = new Map<string, string>();
        if (!values['verify-only']) {
          const started = Date.now();
          const importer = new FarmImport(ctx, source, progress, {
            prune: Boolean(values.prune),
            revisions: Boolean(values.revisions),
          });
          const report = await importer.run();
          userRemap = importer.userRemap;
          // The sentence's numbers are the table's total, of records; the readings are counted apart, by data stream.
          const records = report.counts.filter((c) => c.type !== READINGS_COUNTS);
          const created = records.reduce((n, c) => n + c.created, 0);
          const updated = records.reduce((n, c) => n + c.updated, 0);
          const recordsFailed = records.reduce((n, c) => n + c.failed, 0);
          const readings = report.counts.find((c) => c.type === READINGS_COUNTS);
          const streams = {
            copied: (readings?.created ?? 0) + (readings?.updated ?? 0),
            failed: readings?.failed ?? 0,
          };
          failed = report.failures.length;
          say(`\n${summaryTable(report.counts)}\n`, { event: 'summary', counts: report.counts });
          // What the source named (types, fields, UUIDs, reasons, user names) is printed through printable(): no escape sequence of its reaches the terminal.
          if (report.unsupported.length)
            say(`Skipped (this farm has no such record type): ${names(report.unsupported)}.`, {
              event: 'skipped',
              types: report.unsupported,
            });
          for (const [type, fields] of report.notCarried)
            say(`Not carried (this farm's ${type} has no such field): ${names([...fields].sort())}.`, {
              event: 'not_carried',
              type,
              fields: [...fields].sort(),
            });
          for (const f of report.failures)
            say(`Failed: ${printable(`${f.type} ${f.uuid}: ${f.reason}`)}`, { event: 'failed', ...f });
          if (report.needPassword.length)
            say(
              `These accounts came without a password (farmOS does not give them out): ${names(report.needPassword)}. Set each with: tilth user password --name NAME`,
              { event: 'need_password', users: report.needPassword },
            );
          if (report.matchedUsers.length)
            say(`Already here under the same name (kept as they are): ${names(report.matchedUsers)}.`, {
              event: 'matched_users',
              users: report.matchedUsers,
            });
          say(
            `Imported from ${source.base}: ${created} records created, ${updated} updated, ${report.pruned} pruned, ${recordsFailed} failed${readingsClause(streams)}, in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
            {
              event: 'done',
              created,
              updated,
              pruned: report.pruned,
              failed: recordsFailed,
              readingStreams: streams,
              ms: Date.now() - started,
            },
          );
        } else {
          userRemap = await new FarmImport(ctx, source, progress).matchUsers();
        }
        if (values['no-verify'] && !values['verify-only']) return failed ? 1 : 0;
        const differences = await verifyFarm(ctx, source, supported, progress, userRemap);
        for (const d of differences.slice(0, 200))
          say(
            `Differs: ${describe(d, { timestamp: ctx.registry.get(d.type)?.fieldsByName.get(d.field)?.type === 'timestamp' })}`,
            {
              event: 'differs',
              ...d,
            },
          );
        if (differences.length > 200)
          say(`… and ${differences.length - 200} more differences.`, {
            event: 'differs_more',
            count: differences.length - 200,
          });
        // A record type this farm has not was not compared at all: the verdict says so.
        const skipped = unsupported.length
          ? `${unsupported.join(', ')} not compared (this farm has no such record type)`
          : '';
        const verdict = differences.length
          ? `Verification: ${differences.length} differences${skipped ? `; ${skipped}` : ''}.`
          : `Verified: this farm has what ${source.base} has${skipped ? `, but ${skipped}` : ''}.`;
        say(verdict, { event: 'verified', differences: differences.length, notCompared: unsupported });
        return failed || differences.length ? 1 : 0;
      });
    } catch (error) {
      if (error instanceof SourceError) throw new ImportError(printable(error.message));
      throw error;
    }
  },
};
