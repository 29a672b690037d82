/**
 * The generator: definitions/ → one model → pure emitters → generated/.
 * `generate()` writes; `generate({ check: true })` writes nothing and names every stale file.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { loadDefinitions } from './load.ts';
import { buildModel } from './model.ts';
import { tablesFor } from './storage.ts';
import { emitDescriptors, type FileMap } from './emit/descriptors.ts';
import { emitSchemas } from './emit/schemas.ts';
import { emitOpenApi } from './emit/openapi.ts';
import { emitTypes } from './emit/types.ts';
import { emitMetaTypes } from './emit/meta-types.ts';
import { emitRoutes } from './emit/routes.ts';
import { emitMigrations, indexDifferences, readExistingMigrations } from './emit/migrations.ts';

export { DefinitionError, DefinitionErrors } from './errors.ts';

export interface GenerateOptions {
  /** Project root holding definitions/ and generated/. */
  root: string;
  check?: boolean;
}

export interface GenerateResult {
  /** Files (relative to the root) that were written, or in check mode that are stale. */
  changed: string[];
  /** Files removed, or in check mode that should not exist. */
  removed: string[];
  /** Name of the migration added, if the model needed one. */
  migrationAdded: string | null;
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

export async function generate({ root, check = false }: GenerateOptions): Promise<GenerateResult> {
  const outDir = join(root, 'generated');
  const files = loadDefinitions(join(root, 'definitions'), root);
  const model = buildModel(files);
  const migrationsDir = join(outDir, 'migrations');
  const existing = await readExistingMigrations(migrationsDir);
  const indexDiffers = indexDifferences(migrationsDir, existing.map((m) => m.file));
  const migrations = emitMigrations(existing, tablesFor(model), (file) => readFileSync(join(migrationsDir, file), 'utf8'));

  const desired: FileMap = new Map([
    ...emitDescriptors(model),
    ...emitSchemas(model),
    ...emitOpenApi(model),
    ...(await emitTypes(model)),
    ...(await emitMetaTypes()),
    ...emitRoutes(model),
    ...migrations.files,
  ]);

  const changed: string[] = [];
  for (const [path, content] of [...desired].sort(([a], [b]) => a.localeCompare(b))) {
    const full = join(outDir, path);
    const current = existsSync(full) ? readFileSync(full, 'utf8') : null;
    if (current === content) continue;
    changed.push(relative(root, full));
    if (!check) {
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, content);
    }
  }
  const removed: string[] = [];
  for (const full of listFiles(outDir).sort()) {
    const path = relative(outDir, full).split('\\').join('/');
    if (desired.has(path)) continue;
    removed.push(relative(root, full));
    if (!check) rmSync(full);
  }
  return { changed, removed, migrationAdded: migrations.added, indexDiffers };
}
