/**
 * `tilth import geo FILE` (land, structure or water assets from the field boundaries of a KML or
 * GeoJSON file) and `tilth import csv FILE` (logs in the shape the CSV export writes). Each import
 * is one transaction saved as the API saves (imports/run.ts): it reports what it created, or names
 * the bad row and changes nothing.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { Command } from './command.ts';
import { requireOption, UsageError } from './command.ts';
import { withAppContext } from './database.ts';
import { AccountError, findUser } from '../accounts/users.ts';
import { FIRST_USER_ID } from '../access/accounts.ts';
import { effectivePermissions, USER_ACCESS_SCOPE } from '../access/roles.ts';
import type { Principal } from '../access/principal.ts';
import type { AppContext } from '../context.ts';
import { shapesFromGeoJson, shapesFromKml, GeoFileError } from '../imports/geo.ts';
import { recordsFromCsv, CsvFileError } from '../imports/csv.ts';
import { runImport, ImportError, type ImportItem } from '../imports/run.ts';
import type { ResourceType } from '../model/registry.ts';
import { columnOf } from '../model/storage-of.ts';
import { sameShape } from '../values/geometry.ts';

/** The user an import acts as: --as NAME, or user 1. Their rights apply, as to a token of theirs. */
async function actingUser(ctx: AppContext, name: unknown): Promise<Principal> {
  const user = await findUser(ctx.db.knex, typeof name === 'string' ? { name } : { id: FIRST_USER_ID });
  if (!user)
    throw new AccountError(
      typeof name === 'string'
        ? `There is no user named "${name}".`
        : 'There is no user 1 yet: start the server once, or name a user with --as.',
    );
  return {
    userId: user.id,
    userUuid: user.uuid,
    userName: user.name,
    roles: user.roles,
    scopes: [USER_ACCESS_SCOPE],
    clientId: null,
    tokenChainId: null,
    permissions: effectivePermissions(user.roles, [USER_ACCESS_SCOPE]),
  };
}

function oneFile(positionals: string[] | undefined, usage: string): string {
  const [file, ...extra] = positionals ?? [];
  if (!file || extra.length) throw new UsageError(`Name one file: ${usage}`);
  return file;
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new ImportError(`Cannot read ${file}: ${(error as NodeJS.ErrnoException).code}.`);
  }
}

async function importing(
  file: string,
  ctx: AppContext,
  principal: Principal,
  items: ImportItem[],
  skipped: ImportItem[] = [],
): Promise<number> {
  const created = await runImport(ctx, items, principal);
  const summary = [...created].map(([type, n]) => `${n} ${type}`).join(', ') || 'nothing';
  const skips = skipped.length
    ? `; skipped ${skipped.length} already here (same name and shape): ${skipped.map((item) => item.where).join(', ')}`
    : '';
  process.stdout.write(`Imported ${file} as ${principal.userName}: created ${summary}${skips}.\n`);
  return 0;
}

/**
 * The shapes of a geo import that the farm already has as assets of that bundle, by name and
 * shape: a file imported again (or one that overlaps an earlier one) creates only what is new.
 */
async function alreadyThere(ctx: AppContext, rt: ResourceType, items: ImportItem[]): Promise<Set<ImportItem>> {
  const et = rt.entityType;
  const shapeColumn = columnOf(rt.fieldsByName.get('intrinsic_geometry'));
  const attributesOf = (item: ImportItem) =>
    (item.document as { data: { attributes: { name: string; intrinsic_geometry: string } } }).data.attributes;
  if (!shapeColumn) return new Set();
  const rows: Array<{ name: string; shape: string | null }> = await ctx.db
    .knex(et.table)
    .where('bundle', rt.bundle.bundle)
    .whereIn(et.labelField, [...new Set(items.map((item) => attributesOf(item).name))])
    .select(`${et.labelField} as name`, `${shapeColumn} as shape`);
  return new Set(
    items.filter((item) =>
      rows.some(
        (row) =>
          row.name === attributesOf(item).name &&
          row.shape !== null &&
          sameShape(row.shape, attributesOf(item).intrinsic_geometry),
      ),
    ),
  );
}

/** A file's own mistake ("it is not valid JSON") becomes an import error naming the file. */
async function reading<T>(file: string, read: () => Promise<T> | T): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof GeoFileError || error instanceof CsvFileError)
      throw new ImportError(`${file}: ${error.message}`);
    throw error;
  }
}

const GEO_BUNDLES = ['land', 'structure', 'water'];

export const importCommands: Command[] = [
  {
    name: ['import', 'geo'],
    summary: 'Create land, structure or water assets from the shapes of a KML or GeoJSON file (e.g. field boundaries).',
    usage:
      'tilth import geo FILE.kml|FILE.geojson --bundle land|structure|water [--land-type TYPE] [--structure-type TYPE] [--allow-duplicates] [--as USER]',
    options: {
      bundle: { type: 'string', description: 'land, structure or water' },
      'land-type': { type: 'string', description: 'land_type of land assets (e.g. field, bed, paddock)' },
      'structure-type': {
        type: 'string',
        description: 'structure_type of structure assets (e.g. building, greenhouse)',
      },
      'allow-duplicates': {
        type: 'boolean',
        description: 'create a feature even when an asset of the bundle has its name and shape (skipped otherwise)',
      },
      as: { type: 'string', description: 'the user the assets are created as (default: user 1)' },
    } as Command['options'],
    positionals: true,
    async run(values, positionals) {
      const file = oneFile(positionals, 'tilth import geo FILE --bundle land --land-type field');
      const bundle = requireOption(values, 'bundle');
      if (!GEO_BUNDLES.includes(bundle)) throw new UsageError(`--bundle must be one of ${GEO_BUNDLES.join(', ')}.`);
      const text = readText(file);
      const kml = extname(file).toLowerCase() === '.kml' || text.trimStart().startsWith('<');
      const shapes = await reading(file, () => (kml ? shapesFromKml(text) : shapesFromGeoJson(text)));
      return withAppContext(async (ctx) => {
        const rt = ctx.registry.get(`asset--${bundle}`)!;
        const principal = await actingUser(ctx, values.as);
        const items: ImportItem[] = shapes.map((shape, i) => {
          const attributes: Record<string, unknown> = {
            name: shape.name ?? `${rt.bundle.label} ${i + 1}`,
            intrinsic_geometry: shape.wkt,
          };
          if (bundle === 'land' && values['land-type']) attributes.land_type = values['land-type'];
          if (bundle === 'structure' && values['structure-type']) attributes.structure_type = values['structure-type'];
          if (shape.description) attributes.notes = { value: shape.description };
          return {
            where: `${shape.where}${shape.name ? ` ("${shape.name}")` : ''}`,
            rt,
            document: { data: { type: rt.type, attributes } },
          };
        });
        const skipped = values['allow-duplicates'] ? new Set<ImportItem>() : await alreadyThere(ctx, rt, items);
        return importing(
          file,
          ctx,
          principal,
          items.filter((item) => !skipped.has(item)),
          [...skipped],
        );
      });
    },
  },
  {
    name: ['import', 'csv'],
    summary:
      'Create logs from a CSV file in the shape the CSV export writes (id, type, attributes, relationships as names and UUIDs).',
    usage: 'tilth import csv FILE.csv [--as USER]',
    options: {
      as: { type: 'string', description: 'the user the logs are created as (default: user 1)' },
    } as Command['options'],
    positionals: true,
    async run(values, positionals) {
      const file = oneFile(positionals, 'tilth import csv FILE.csv');
      const text = readText(file);
      return withAppContext(async (ctx) => {
        const principal = await actingUser(ctx, values.as);
        const records = await reading(file, () => recordsFromCsv(text, ctx.registry, ctx.db.knex));
        return importing(
          file,
          ctx,
          principal,
          records.map((r) => ({ where: `row ${r.row}`, rt: r.rt, document: r.document })),
        );
      });
    },
  },
];
