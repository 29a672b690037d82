/**
 * Loads what the generator emitted: the model, the route table, the migrations and the JSON
 * Schemas, from Tilth's generated/ and, when the site folder has generated output, the farm's own
 * bundles from <site>/generated/ (JSON, see model/site.ts), merged in. The directories are
 * configurable so that tests can serve a fixture's.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DataModel, SchemaOp, ShapeName } from './model/descriptor.ts';
import { SHAPE_NAMES } from './model/descriptor.ts';
import type { RouteEntry } from './model/routes.ts';
import type { BundleUi } from './model/ui.ts';
import type { QuickFormDescriptor } from './model/quick.ts';
import { modelFingerprint } from './model/fingerprint.ts';
import { SITE_SERIES, type SiteModelFile } from './model/site.ts';
import type { GeneratedMigration } from './storage/migrations.ts';
import { applySchemaOps } from './storage/schema-ops.ts';

export interface GeneratedArtifacts {
  dir: string;
  model: DataModel;
  routes: readonly RouteEntry[];
  migrations: GeneratedMigration[];
  /** Resource schema text by resource type, with the `{base_url}` placeholder: the farmOS 2.x shape's. */
  schemas: Map<string, string>;
  /** The same for every other API shape (farmOS 4.x's), from `schemas/<shape>/`; a shape generated before it had none has an empty map. */
  shapeSchemas: Map<ShapeName, Map<string, string>>;
  /** The web interface's description of each bundle (generated/ui/), by resource type; a bundle generated before there was one has none. */
  ui: Map<string, BundleUi>;
  /** The site folder's generated/ that was merged in, or null when the site has none. */
  siteGeneratedDir: string | null;
  /** Quick forms (generated/quick/, the site's after Tilth's), by name. */
  quick: Map<string, QuickFormDescriptor>;
}

export const DEFAULT_GENERATED_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'generated');

/**
 * Tilth's own generated/ by literal paths, so that the runtime's bundle (bin/runtime-bundle.js)
 * carries it and its imports of the runtime share the bundle's modules; another directory (a
 * test's fixture) is imported by URL. Still imported only when loaded, as the others.
 */
const importDefault = {
  model: () => import('../generated/descriptors/index.ts') as Promise<{ model: DataModel }>,
  routes: () => import('../generated/routes.ts') as Promise<{ routes: readonly RouteEntry[] }>,
  migrations: () => import('../generated/migrations/index.ts') as Promise<{ migrations: GeneratedMigration[] }>,
};

/** generated/ could not be loaded: a file it imports is missing or broken. */
export class GeneratedLoadError extends Error {
  constructor(dir: string, cause: unknown) {
    super(
      `${dir} cannot be loaded: ${cause instanceof Error ? cause.message.split('\n')[0] : String(cause)}. ` +
        `Run \`npm run generate -- --check\`, which names what differs, then \`npm run generate\`.`,
    );
    this.name = 'GeneratedLoadError';
  }
}

/** The site's generated output does not fit this Tilth (an upgrade changed Tilth's model), or is missing or damaged. */
export class SiteOutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SiteOutputError';
  }
}

const cache = new Map<string, Promise<GeneratedArtifacts>>();

/**
 * Load generated/ and, if `siteDir` has generated output, the site's bundles with it. A site that
 * has definitions but no output yet, or output generated against another version of Tilth's
 * model, is refused with what to run: its bundles' descriptors carry Tilth's base fields, and its
 * migrations were diffed against Tilth's.
 */
export function loadGenerated(
  dir: string = DEFAULT_GENERATED_DIR,
  siteDir: string | null = null,
): Promise<GeneratedArtifacts> {
  const key = `${dir}\0${siteDir ?? ''}`;
  let loaded = cache.get(key);
  if (!loaded) {
    loaded = (async () => {
      const url = (p: string) => pathToFileURL(join(dir, p)).href;
      const [{ model }, { routes }, { migrations }] = await Promise.all(
        dir === DEFAULT_GENERATED_DIR
          ? [importDefault.model(), importDefault.routes(), importDefault.migrations()]
          : [
              import(url('descriptors/index.ts')) as Promise<{ model: DataModel }>,
              import(url('routes.ts')) as Promise<{ routes: readonly RouteEntry[] }>,
              import(url('migrations/index.ts')) as Promise<{ migrations: GeneratedMigration[] }>,
            ],
      ).catch((error: unknown) => {
        // A file missing or broken in generated/ (a merge that kept one side's index): name it, no stack trace.
        throw new GeneratedLoadError(dir, error);
      });
      const schemas = readSchemas(join(dir, 'schemas'));
      const shapeSchemas = new Map(
        SHAPE_NAMES.filter((shape) => shape !== 'farmos2').map((shape) => [
          shape,
          readSchemas(join(dir, 'schemas', shape)),
        ]),
      );
      const ui = readUi(join(dir, 'ui'));
      const quick = readQuick(join(dir, 'quick'));
      // Each migration knows its file, whose checksum is compared with the one recorded when applied.
      const withFiles = migrations.map((m) => ({ ...m, file: join(dir, 'migrations', `${m.name}.ts`) }));
      const core: GeneratedArtifacts = {
        dir,
        model,
        routes,
        migrations: withFiles,
        schemas,
        shapeSchemas,
        ui,
        siteGeneratedDir: null,
        quick,
      };
      return siteDir ? withSite(core, siteDir) : core;
    })();
    cache.set(key, loaded);
  }
  return loaded;
}

/** Tilth's artifacts with the site's merged in: its bundles, modules, routes, schemas and its own migration series. */
function withSite(core: GeneratedArtifacts, siteDir: string): GeneratedArtifacts {
  const out = join(siteDir, 'generated');
  const modelFile = join(out, 'model.json');
  if (!existsSync(modelFile)) {
    if (existsSync(join(siteDir, 'definitions'))) {
      throw new SiteOutputError(
        `${join(siteDir, 'definitions')} has not been generated yet (${modelFile} is missing). Run \`npm run generate\`, then \`npx tilth migrate\`.`,
      );
    }
    return core;
  }
  let site: SiteModelFile;
  try {
    site = JSON.parse(readFileSync(modelFile, 'utf8')) as SiteModelFile;
  } catch (error) {
    throw new SiteOutputError(
      `${modelFile} cannot be read: ${(error as Error).message.split('\n')[0]}. Run \`npm run generate\`, which writes it again.`,
    );
  }
  if (site.core !== modelFingerprint(core.model)) {
    throw new SiteOutputError(
      `${out} was generated for another version of Tilth's own definitions (an upgrade changed them). ` +
        `Run \`npm run generate\`, which generates the site's bundles again (with a migration of their own only if they need one), then \`npx tilth migrate\`.`,
    );
  }
  const schemas = new Map(core.schemas);
  const shapeSchemas = new Map([...core.shapeSchemas].map(([shape, texts]) => [shape, new Map(texts)]));
  for (const bundle of site.bundles) {
    const file = join(out, 'schemas', `${bundle.type}.json`);
    if (!existsSync(file))
      throw new SiteOutputError(`${file} is missing. Run \`npm run generate\`, which writes it again.`);
    schemas.set(bundle.type, readFileSync(file, 'utf8'));
    // A site bundle gets every shape's schema, as Tilth's own do (generator/emit/schemas.ts).
    for (const [shape, texts] of shapeSchemas) {
      const shaped = join(out, 'schemas', shape, `${bundle.type}.json`);
      if (!existsSync(shaped))
        throw new SiteOutputError(`${shaped} is missing. Run \`npm run generate\`, which writes it again.`);
      texts.set(bundle.type, readFileSync(shaped, 'utf8'));
    }
  }
  const ui = new Map(core.ui);
  for (const [type, description] of readUi(join(out, 'ui'))) ui.set(type, description);
  const quick = new Map([...core.quick, ...readQuick(join(out, 'quick'))]);
  const migrations: GeneratedMigration[] = site.migrations.map(({ name, checksum }) => {
    const file = join(out, 'migrations', `${name}.json`);
    if (!existsSync(file))
      throw new SiteOutputError(
        `${modelFile} lists the migration ${name}, but ${file} does not exist. Restore it (it may already be applied), or run \`npm run generate -- --check\`, which names what differs.`,
      );
    const { ops } = JSON.parse(readFileSync(file, 'utf8')) as { ops: SchemaOp[] };
    return {
      name,
      series: SITE_SERIES,
      checksum,
      file,
      up: (knex) => applySchemaOps(knex, ops),
      down: async () => {
        throw new Error('Tilth migrations only go forward: restore a backup to go back.');
      },
    };
  });
  const model: DataModel = {
    entityTypes: core.model.entityTypes,
    bundles: [...core.model.bundles, ...site.bundles].sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0)),
    modules: [...core.model.modules, ...site.modules],
  };
  return {
    ...core,
    model,
    routes: [...core.routes, ...site.routes],
    migrations: [...core.migrations, ...migrations],
    schemas,
    shapeSchemas,
    ui,
    siteGeneratedDir: out,
    quick,
  };
}

/** The UI descriptions in a generated ui/ folder, by resource type (none when the folder is missing: output generated before it existed). */
function readUi(dir: string): Map<string, BundleUi> {
  const ui = new Map<string, BundleUi>();
  if (!existsSync(dir)) return ui;
  for (const file of readdirSync(dir)) {
    if (!file.endsWith('.json')) continue;
    const { $comment: _, ...description } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as BundleUi & {
      $comment?: string;
    };
    ui.set(description.type, description);
  }
  return ui;
}

/** The resource schemas of one folder by resource type (its `.json` files); none when there is no such folder. */
function readSchemas(folder: string): Map<string, string> {
  const schemas = new Map<string, string>();
  if (!existsSync(folder)) return schemas;
  for (const file of readdirSync(folder)) {
    if (file.endsWith('.json')) schemas.set(file.slice(0, -5), readFileSync(join(folder, file), 'utf8'));
  }
  return schemas;
}

/** The quick forms in a generated quick/ folder, by name (none when the folder is missing). */
function readQuick(dir: string): Map<string, QuickFormDescriptor> {
  const forms = new Map<string, QuickFormDescriptor>();
  if (!existsSync(dir)) return forms;
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.json')) continue;
    const { $comment: _, ...form } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as QuickFormDescriptor & {
      $comment?: string;
    };
    forms.set(form.name, form);
  }
  return forms;
}
