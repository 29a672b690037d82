/**
 * Emits generated/meta-schema.ts: the TypeScript types of the definitions format, compiled from
 * generator/meta-schema.json with json-schema-to-typescript, so the generator and the runtime
 * share one list of what a field may be (a `computed` kind unknown to the meta-schema is a type
 * error, not a silently ignored string).
 */
import { readFileSync } from 'node:fs';
import { compile } from 'json-schema-to-typescript';
import { tsStamp } from './stamp.ts';
import type { FileMap } from './descriptors.ts';

const META_SCHEMA = new URL('../meta-schema.json', import.meta.url);

export async function emitMetaTypes(): Promise<FileMap> {
  const schema = JSON.parse(readFileSync(META_SCHEMA, 'utf8'));
  const types = await compile(schema, 'DefinitionFile', {
    bannerComment: '',
    additionalProperties: false,
    format: false,
    declareExternallyReferenced: true,
    unreachableDefinitions: true,
  });
  const extra = [
    "/** What a computed field is computed from (the meta-schema's `computed` list). */",
    "export type ComputedKind = NonNullable<Field['computed']>;",
    '/** How a field is filled in automatically on save. */',
    "export type AutoKind = NonNullable<Field['auto']>;",
  ].join('\n');
  return new Map([['meta-schema.ts', `${tsStamp()}/* eslint-disable */\n\n${types.trim()}\n\n${extra}\n`]]);
}
