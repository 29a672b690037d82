/** Emits TypeScript types of each resource's attributes and relationships with json-schema-to-typescript. */
import { compile } from 'json-schema-to-typescript';
import type { DataModel } from '../../runtime/model/descriptor.ts';
import { resourceSchema } from './schemas.ts';
import { tsStamp } from './stamp.ts';
import type { FileMap } from './descriptors.ts';

const pascal = (s: string) =>
  s
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((p) => p[0]!.toUpperCase() + p.slice(1))
    .join('');

export async function emitTypes(model: DataModel): Promise<FileMap> {
  const files: FileMap = new Map();
  for (const bundle of model.bundles) {
    const schema = resourceSchema(bundle, model) as { definitions: Record<string, any> };
    const name = pascal(bundle.type);
    // Nested titles would become named types (and clash between the two compiles): keep them as docs only.
    const strip = (s: Record<string, any>) =>
      JSON.parse(
        JSON.stringify(s, (k, v) =>
          k === 'links' || k === '$comment' ? undefined : k === 'title' && typeof v === 'string' ? undefined : v,
        ),
      );
    const attributes = await compile(
      { ...strip(schema.definitions.attributes), title: `${name}Attributes` },
      `${name}Attributes`,
      {
        bannerComment: '',
        additionalProperties: false,
        format: false,
        declareExternallyReferenced: true,
      },
    );
    const relationships = await compile(
      { ...strip(schema.definitions.relationships), title: `${name}Relationships` },
      `${name}Relationships`,
      {
        bannerComment: '',
        additionalProperties: false,
        format: false,
        declareExternallyReferenced: true,
      },
    );
    files.set(
      `types/${bundle.type}.ts`,
      `${tsStamp()}/* eslint-disable */\n\n/** JSON:API resource type name. */\nexport type ${name}Type = '${bundle.type}';\n\n${attributes.trim()}\n\n${relationships.trim()}\n`,
    );
  }
  return files;
}
