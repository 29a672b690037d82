/**
 * Loads what the generator emitted: the model, the route table, the migrations and the JSON
 * Schemas. The directory is configurable so that tests can serve a fixture's generated/.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DataModel } from './model/descriptor.ts';
import type { RouteEntry } from './model/routes.ts';
import type { GeneratedMigration } from './storage/migrations.ts';

export interface GeneratedArtifacts {
  dir: string;
  model: DataModel;
  routes: readonly RouteEntry[];
  migrations: GeneratedMigration[];
  /** Resource schema text by resource type, with the `{base_url}` placeholder. */
  schemas: Map<string, string>;
}

export const DEFAULT_GENERATED_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'generated');

const cache = new Map<string, Promise<GeneratedArtifacts>>();

export function loadGenerated(dir: string = DEFAULT_GENERATED_DIR): Promise<GeneratedArtifacts> {
  let loaded = cache.get(dir);
  if (!loaded) {
    loaded = (async () => {
      const url = (p: string) => pathToFileURL(join(dir, p)).href;
      const [{ model }, { routes }, { migrations }] = await Promise.all([
        import(url('descriptors/index.ts')) as Promise<{ model: DataModel }>,
        import(url('routes.ts')) as Promise<{ routes: readonly RouteEntry[] }>,
        import(url('migrations/index.ts')) as Promise<{ migrations: GeneratedMigration[] }>,
      ]);
      const schemas = new Map<string, string>();
      for (const file of readdirSync(join(dir, 'schemas'))) {
        if (file.endsWith('.json')) schemas.set(file.slice(0, -5), readFileSync(join(dir, 'schemas', file), 'utf8'));
      }
      // Each migration knows its file, whose checksum is compared with the one recorded when applied.
      const withFiles = migrations.map((m) => ({ ...m, file: join(dir, 'migrations', `${m.name}.ts`) }));
      return { dir, model, routes, migrations: withFiles, schemas };
    })();
    cache.set(dir, loaded);
  }
  return loaded;
}
