/**
 * `tilth backup FILE` and `tilth restore FILE` (storage/backup.ts), with a progress bar on a
 * terminal. A backup is of a farm that exists, opened by the one path every command opens a farm
 * by (cli/database.ts withFarm, host/farm.ts openFarm), whichever release migrated it last. A
 * restore makes the farm where there is none yet (an empty data folder or database), so it opens
 * no farm first: it reads the same settings and refuses any place that holds one.
 */
import type { Command } from './command.ts';
import { UsageError } from './command.ts';
import { describeDatabase, loadConfig } from '../config.ts';
import { backup, restore, type Progress } from '../storage/backup.ts';
import { withFarm } from './database.ts';

/** A one-line progress bar on stderr when it is a terminal; nothing otherwise. */
function progressBar(): Progress & { done(): void } {
  const tty = process.stderr.isTTY === true;
  let last = '';
  const bar = ((stage: string, fraction: number) => {
    if (!tty) return;
    const width = 30;
    const filled = Math.round(Math.min(1, Math.max(0, fraction)) * width);
    const line = `${stage.padEnd(9)} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}%`;
    if (line !== last) process.stderr.write(`\r${line}`);
    last = line;
  }) as Progress & { done(): void };
  bar.done = () => {
    if (tty && last) process.stderr.write('\n');
  };
  return bar;
}

function fileArgument(positionals: string[] | undefined, usage: string): string {
  const [file, ...extra] = positionals ?? [];
  if (!file || extra.length) throw new UsageError(`Name one backup file: ${usage}`);
  return file;
}

/** A file's size for people: bytes below 1 KB, then KB, MB, GB or TB with one decimal (1 KB = 1024 bytes). */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} byte${bytes === 1 ? '' : 's'}`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (unit < units.length - 1 && Number(value.toFixed(1)) >= 1024) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

export const backupCommands: Command[] = [
  {
    name: ['backup'],
    summary: 'Write a backup (database, keys and uploaded files) to FILE while the server runs.',
    usage: 'tilth backup FILE.tar.gz',
    options: {} as Command['options'],
    positionals: true,
    async run(_values, positionals) {
      const file = fileArgument(positionals, 'tilth backup FILE.tar.gz');
      const report = await withFarm(
        (farm) => {
          const bar = progressBar();
          return backup(farm.config, file, bar).finally(() => bar.done());
        },
        { use: 'backup', says: (config) => `Backing up the ${describeDatabase(config)} and ${config.dataDir}/files.` },
      );
      process.stdout.write(`Wrote ${report.file}: ${sizeText(report.bytes)}, ${report.files} uploaded file(s).\n`);
      return 0;
    },
  },
  {
    name: ['restore'],
    summary: 'Restore a backup into an empty data directory or database (never over a live one).',
    usage: 'tilth restore FILE.tar.gz',
    options: {} as Command['options'],
    positionals: true,
    async run(_values, positionals) {
      const file = fileArgument(positionals, 'tilth restore FILE.tar.gz');
      const config = loadConfig();
      const bar = progressBar();
      const manifest = await restore(config, file, bar).finally(() => bar.done());
      process.stdout.write(
        `Restored the backup of ${manifest.created} (Tilth ${manifest.tilth}) into the ${describeDatabase(config)}. Start the server with npm start, which applies any newer migrations.\n`,
      );
      return 0;
    },
  },
];
