/**
 * Field Kit's field modules (farmOS's farm_fieldkit): built scripts a self-hoster installs with
 * `tilth fieldkit add-module`, kept in the `field_module` table (core migration 0008), listed at
 * `/api/field_module/field_module` and served at `/fieldkit/js/<name>/index.js`. Nothing is
 * fetched from anywhere at run time: the script is the file that was added, byte for byte.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { selectRows } from './sql.ts';
import { write } from './transactions.ts';

export const FIELD_MODULE_TABLE = 'field_module';
/** A field module's name: its URL segment and Field Kit's `drupal_internal__id`. */
export const FIELD_MODULE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** The largest script accepted (Field Kit's own modules are a few hundred kB). */
export const FIELD_MODULE_MAX_BYTES = 5 * 1024 * 1024;

export interface FieldModule {
  name: string;
  label: string;
  description: string;
  /** The script's SHA-256, base64url: its ETag. */
  hash: string;
  changed: number;
}

/** A field module that cannot be added or removed as asked; the message says why. */
export class FieldModuleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FieldModuleError';
  }
}

/** Every field module, by name. */
export async function listFieldModules(db: Knex): Promise<FieldModule[]> {
  const rows = await selectRows<FieldModule>(
    db,
    `SELECT name, label, description, hash, changed FROM ${FIELD_MODULE_TABLE} ORDER BY name`,
    [],
  );
  return rows.map((r) => ({ ...r, changed: Number(r.changed) }));
}

/** A field module's script and its hash, or null. */
export async function fieldModuleScript(db: Knex, name: string): Promise<{ script: string; hash: string } | null> {
  const [row] = await selectRows<{ script: string; hash: string }>(
    db,
    `SELECT script, hash FROM ${FIELD_MODULE_TABLE} WHERE name = ?`,
    [name],
  );
  return row ?? null;
}

/** Add a field module, or replace the one of that name (a new build). Returns whether it replaced one. */
export async function putFieldModule(
  db: Knex,
  input: { name: string; label: string; description?: string; script: Buffer },
): Promise<boolean> {
  if (!FIELD_MODULE_NAME.test(input.name))
    throw new FieldModuleError(
      `"${input.name}" is not a field module name: lowercase letters, digits, _ and -, starting with a letter or digit, at most 64.`,
    );
  if (!input.label.trim())
    throw new FieldModuleError('A field module needs a label (--label), the name Field Kit shows.');
  if (!input.script.length) throw new FieldModuleError('The script is empty.');
  if (input.script.length > FIELD_MODULE_MAX_BYTES)
    throw new FieldModuleError(
      `The script is ${input.script.length} bytes; at most ${FIELD_MODULE_MAX_BYTES} are served.`,
    );
  let script: string;
  try {
    script = new TextDecoder('utf-8', { fatal: true }).decode(input.script);
  } catch {
    throw new FieldModuleError('The script is not UTF-8 text: add the built index.js of a field module.');
  }
  const row = {
    name: input.name,
    label: input.label.trim(),
    description: input.description?.trim() ?? '',
    script,
    hash: createHash('sha256').update(input.script).digest('base64url'),
    changed: Math.floor(Date.now() / 1000),
  };
  return write(db, async (trx) => {
    const replaced = (await trx(FIELD_MODULE_TABLE).where('name', input.name).delete()) > 0;
    await trx(FIELD_MODULE_TABLE).insert(row);
    return replaced;
  });
}

/** Remove a field module. */
export async function removeFieldModule(db: Knex, name: string): Promise<void> {
  if (!(await db(FIELD_MODULE_TABLE).where('name', name).delete()))
    throw new FieldModuleError(`There is no field module "${name}".`);
}
