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
      ]).catch((error: unknown) => {
        // A file missing or broken in generated/ (a merge that kept one side's index): name it, no stack trace.
        throw new GeneratedLoadError(dir, error);
      });
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
