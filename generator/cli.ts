/** `tilth generate [--check]`: regenerate generated/ from definitions/, or check that it is current. */
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { generate, DefinitionErrors } from './index.ts';
import { readEnvironment } from '../runtime/config.ts';

const HELP = `Usage: tilth generate [--check] [--root DIR] [--site DIR]

Reads definitions/*.yaml, checks them, and writes generated/: descriptors, JSON Schemas,
TypeScript types, the route table and Knex migrations. Running it twice changes nothing.
A change to definitions/ that needs new storage adds one new migration; applied migrations
are never rewritten. The farm's own bundles, in the site folder's definitions/, are checked
with Tilth's and written to the site folder's generated/, with migrations of their own.

  --check      write nothing; exit 1 and name each stale file if generated/ is out of date
  --root DIR   project root holding definitions/ and generated/ (default: this checkout)
  --site DIR   the site folder (default: TILTH_SITE_DIR, from the environment or .env, else
               site/ in the project root)
  --help       show this help
`;

async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: process.argv.slice(3),
      options: {
        check: { type: 'boolean' },
        root: { type: 'string' },
        site: { type: 'string' },
        help: { type: 'boolean' },
      },
    }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const root = resolve(args.root ?? resolve(dirname(fileURLToPath(import.meta.url)), '..'));
  try {
    // TILTH_SITE_DIR as the server reads it: from the environment or the env file (.env).
    const siteDir = resolve(args.site ?? (readEnvironment().TILTH_SITE_DIR || join(root, 'site')));
    const result = await generate({ root, siteDir, check: Boolean(args.check) });
    if (args.check) {
      const stale = [
        ...result.changed.map((f) => `  stale:     ${f}`),
        ...result.removed.map((f) => `  extra:     ${f}`),
        ...result.indexDiffers.map((d) => `  index:     ${d}`),
      ];
      if (stale.length) {
        process.stderr.write(
          `generated/ is out of date with definitions/ (or the site folder's generated/ with its definitions/). Run \`npm run generate\` and commit the result.\n${stale.join('\n')}\n`,
        );
        return 1;
      }
      process.stdout.write('generated/ is up to date.\n');
      return 0;
    }
    for (const d of result.indexDiffers)
      process.stdout.write(`Rewrote generated/migrations/index.ts, which did not match the files: ${d}.\n`);
    if (result.migrationAdded)
      process.stdout.write(`Added migration generated/migrations/${result.migrationAdded}.ts\n`);
    if (result.siteMigrationAdded) process.stdout.write(`Added the site's migration ${result.siteMigrationAdded}\n`);
    process.stdout.write(
      result.changed.length || result.removed.length
        ? `Wrote ${result.changed.length} file(s), removed ${result.removed.length}.\n`
        : 'generated/ was already up to date.\n',
    );
    return 0;
  } catch (error) {
    if (error instanceof DefinitionErrors) {
      process.stderr.write(
        `The definitions have ${error.errors.length} problem(s); nothing was generated.\n${error.message}\n`,
      );
      return 1;
    }
    if (error instanceof Error && !(error instanceof TypeError) && !(error instanceof ReferenceError)) {
      process.stderr.write(`${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

process.exitCode = await main();
