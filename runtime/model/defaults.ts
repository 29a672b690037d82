/**
 * What a new record holds in a field it was not given: the one place the YAML's defaults are
 * applied (a bundle's `default` and `default_callback`), for every path that creates records: the
 * entity service (entities/service.ts), the importer (farmos-import/records.ts) and the accounts
 * made on the command line (accounts/users.ts).
 *
 * `unique_key` is DataStream::createUniqueKey: 32 hex characters, the shape of farmOS's
 * md5(mt_rand()), but from 128 random bits, since the key is what lets a device post readings.
 */
import { randomBytes } from 'node:crypto';
import type { DefaultCallback, FieldDescriptor } from './descriptor.ts';

export function defaultFromCallback(callback: DefaultCallback): string {
  switch (callback) {
    case 'unique_key':
      return randomBytes(16).toString('hex');
  }
}

/** A default's value: a callback's, the declared one (an object default means the time of the save), or empty. */
export type DefaultValue = string | number | boolean | null | never[];

/** The value a new record gets in `field` when it was given none. */
export function defaultValue(field: FieldDescriptor, now: number): DefaultValue {
  if (field.defaultCallback) return defaultFromCallback(field.defaultCallback);
  if (field.default !== undefined) return typeof field.default === 'object' ? now : (field.default as DefaultValue);
  return field.multiple ? [] : null;
}

/** Whether a field has a default of its own (declared, or a callback), as opposed to being left empty. */
export function hasDefault(field: FieldDescriptor): boolean {
  return field.defaultCallback !== undefined || field.default !== undefined;
}

/** Give each stored field of `fields` that `values` lacks its default (defaultValue). */
export function fillDefaults(fields: readonly FieldDescriptor[], values: Map<string, unknown>, now: number): void {
  for (const field of fields) {
    if (field.computed || field.storage.kind === 'none' || values.has(field.name)) continue;
    values.set(field.name, defaultValue(field, now));
  }
}
