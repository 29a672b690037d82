/** Emits the per-bundle descriptors the runtime reads: pure data, typed by the runtime's public surface. */
import type { DataModel } from '../../runtime/model/descriptor.ts';
import { tsStamp } from './stamp.ts';

export type FileMap = Map<string, string>;

const ident = (type: string) => type.replace(/--/g, '__');

export function emitDescriptors(model: DataModel): FileMap {
  const files: FileMap = new Map();
  for (const bundle of model.bundles) {
    files.set(
      `descriptors/${bundle.type}.ts`,
      `${tsStamp()}import type { BundleDescriptor } from '../../runtime/public.ts';\n\nexport const descriptor: BundleDescriptor = ${JSON.stringify(bundle, null, 2)};\n`,
    );
  }
  const imports = model.bundles
    .map((b) => `import { descriptor as ${ident(b.type)} } from './${b.type}.ts';`)
    .join('\n');
  files.set(
    'descriptors/index.ts',
    `${tsStamp()}import type { DataModel } from '../../runtime/public.ts';\n${imports}\n\n` +
      `/** The whole data model: entity types, every bundle (core and optional modules) and the modules. */\n` +
      `export const model: DataModel = {\n` +
      `  entityTypes: ${JSON.stringify(model.entityTypes, null, 2).replace(/\n/g, '\n  ')},\n` +
      `  bundles: [\n${model.bundles.map((b) => `    ${ident(b.type)},`).join('\n')}\n  ],\n` +
      `  modules: ${JSON.stringify(model.modules, null, 2).replace(/\n/g, '\n  ')},\n};\n`,
  );
  return files;
}
