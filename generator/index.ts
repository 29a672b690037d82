/**
 * The generator: definitions/ → one model → pure emitters → generated/; and a site folder's
 * definitions/ (the farm's own bundles) → <site>/generated/ (site.ts), apart from Tilth's.
 * `generate()` writes; `generate({ check: true })` writes nothing and names every stale file.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { loadDefinitions, type SourceFile } from './load.ts';
import { DefinitionErrors, shownPath } from './errors.ts';
import { emitSite, readSiteMigrations, SITE_STAMP } from './site.ts';
import { buildModel } from './model.ts';
import { tablesFor, valueRewritesFor } from './storage.ts';
import { emitDescriptors, type FileMap } from './emit/descriptors.ts';
import { emitSchemas } from './emit/schemas.ts';
import { emitOpenApi } from './emit/openapi.ts';
import { emitTypes } from './emit/types.ts';
import { emitMetaTypes } from './emit/meta-types.ts';
import { emitRoutes } from './emit/routes.ts';
import { emitUi } from './emit/ui.ts';
import { STAMP } from './emit/stamp.ts';
import { buildUi } from './ui.ts';
import { emitMigrations, indexDifferences, readExistingMigrations } from './emit/migrations.ts';
import { buildQuickForms, emitQuickForms } from './quick.ts';

export { DefinitionError, DefinitionErrors } from './errors.ts';

export interface GenerateOptions {
  /** Project root holding definitions/ and generated/. */
  root: string;
  /** The farm's site folder (default <root>/site); nothing is written there unless it has definitions or migrations. */
  siteDir?: string;
  check?: boolean;
}

export interface GenerateResult {
  /** Files (relative to the root) that were written, or in check mode that are stale. */
  changed: string[];
  /** Files removed, or in check mode that should not exist. */
  removed: string[];
  /** Name of the migration added, if the model needed one. */
  migrationAdded: string | null;
  /** The site migration added (relative to the root), if the site's bundles needed one. */
  siteMigrationAdded: string | null;
  /** How generated/migrations/index.ts differed from the migration files present (fixed unless checking). */
  indexDiffers: string[];
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...listFiles(full));
    else out.push(full);
  }
  return out;
}

/** Load Tilth's definitions and the site's, reporting the problems of both at once. */
function loadBoth(root: string, siteDir: string): { core: SourceFile[]; site: SourceFile[] } {
  const errors = [];
  let core: SourceFile[] = [];
  let site: SourceFile[] = [];
  try {
    core = loadDefinitions(join(root, 'definitions'), root);
  } catch (error) {
    if (!(error instanceof DefinitionErrors)) throw error;
    errors.push(...error.errors);
  }
  try {
    site = loadDefinitions(join(siteDir, 'definitions'), root, 'site');
  } catch (error) {
    if (!(error instanceof DefinitionErrors)) throw error;
    errors.push(...error.errors);
  }
  if (errors.length) throw new DefinitionErrors(errors);
  return { core, site };
}

/** Write (or in check mode compare) `desired` into `outDir`, removing files it does not hold. Paths are reported relative to `root`. */
function sync(
  outDir: string,
  desired: FileMap,
  root: string,
  check: boolean,
): { changed: string[]; removed: string[] } {
  const changed: string[] = [];
  for (const [path, content] of [...desired].sort(([a], [b]) => a.localeCompare(b))) {
    const full = join(outDir, path);
    const current = existsSync(full) ? readFileSync(full, 'utf8') : null;
    if (current === content) continue;
    changed.push(shownPath(root, full));
    if (!check) {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, content);
    }
  }
  const removed: string[] = [];
  for (const full of listFiles(outDir).sort()) {
    const path = relative(outDir, full).split('\\').join('/');
    if (desired.has(path)) continue;
    removed.push(shownPath(root, full));
    if (!check) rmSync(full);
  }
  return { changed, removed };
}

export async function generate({
  root,
  siteDir = join(root, 'site'),
  check = false,
}: GenerateOptions): Promise<GenerateResult> {
  const outDir = join(root, 'generated');
  const files = loadBoth(root, siteDir);
  const model = buildModel(files.core);
  const ui = buildUi(files.core, model);
  const quickForms = buildQuickForms(files.core, model);
  const migrationsDir = join(outDir, 'migrations');
  const existing = await readExistingMigrations(migrationsDir);
  const indexDiffers = indexDifferences(
    migrationsDir,
    existing.map((m) => m.file),
  );
  const migrations = emitMigrations(
    existing,
    tablesFor(model),
    (file) => readFileSync(join(migrationsDir, file), 'utf8'),
    valueRewritesFor(model),
  );

  const desired: FileMap = new Map([
    ...emitDescriptors(model),
    ...emitSchemas(model),
    ...emitOpenApi(model),
    ...(await emitTypes(model)),
    ...(await emitMetaTypes()),
    ...emitRoutes(model),
    ...emitUi(ui, STAMP),
    ...emitQuickForms(quickForms, STAMP),
    ...migrations.files,
  ]);
  const { changed, removed } = sync(outDir, desired, root, check);

  // The site's output: only when it has definitions, or migrations it must keep.
  const siteOut = join(siteDir, 'generated');
  const siteMigrations = readSiteMigrations(siteOut, root);
  let siteMigrationAdded: string | null = null;
  if (files.site.length || siteMigrations.length) {
    const full = buildModel([...files.core, ...files.site]);
    const fullUi = buildUi([...files.core, ...files.site], full);
    const coreMigrations = migrations.added
      ? [
          ...existing,
          { name: migrations.added, file: `${migrations.added}.ts`, ops: migrations.addedOps, recorded: null },
        ]
      : existing;
    const site = emitSite({
      core: model,
      full,
      ui: fullUi,
      coreMigrations,
      siteMigrations,
      desiredTables: tablesFor(full),
      rewrites: valueRewritesFor(full),
      shownMigrationsDir: shownPath(root, join(siteOut, 'migrations')),
      readExisting: (file) => readFileSync(join(siteOut, 'migrations', file), 'utf8'),
    });
    // The site's quick forms, checked with Tilth's (one name each) against the model with the site's bundles.
    const siteQuick = new Set(files.site.filter((f) => f.kind === 'quickFormFile').map((f) => f.path));
    const allQuick = buildQuickForms([...files.core, ...files.site], full);
    const siteNames = new Set(
      [...siteQuick].map((p) =>
        p
          .split(/[\\/]/)
          .pop()!
          .replace(/\.ya?ml$/, ''),
      ),
    );
    for (const [path, text] of emitQuickForms(
      allQuick.filter((q) => siteNames.has(q.name)),
      SITE_STAMP,
    ))
      site.files.set(path, text);
    const result = sync(siteOut, site.files, root, check);
    changed.push(...result.changed);
    removed.push(...result.removed);
    if (site.added) siteMigrationAdded = shownPath(root, join(siteOut, 'migrations', `${site.added}.json`));
  }
  return { changed, removed, migrationAdded: migrations.added, siteMigrationAdded, indexDiffers };
}
