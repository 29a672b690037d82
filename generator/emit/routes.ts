/**
 * Emits the route table with ts-morph: every JSON:API route of every resource type, bound to the
 * name of the shared handler that serves it. The runtime indexes this table; it has no routes of
 * its own for resources.
 */
import { Project, VariableDeclarationKind } from 'ts-morph';
import type { DataModel } from '../../runtime/model/descriptor.ts';
import type { RouteEntry } from '../../runtime/model/routes.ts';
import { STAMP } from './stamp.ts';
import type { FileMap } from './descriptors.ts';

export function routeEntries(model: DataModel): RouteEntry[] {
  const routes: RouteEntry[] = [];
  for (const bundle of model.bundles) {
    const base = `/api/${bundle.entityType}/${bundle.bundle}`;
    const r = (method: RouteEntry['method'], path: string, handler: RouteEntry['handler'], field?: string) =>
      routes.push({ method, path, handler, resourceType: bundle.type, ...(field ? { field } : {}) });
    r('GET', base, 'collection.get');
    r('POST', base, 'collection.post');
    r('GET', `${base}/{id}`, 'individual.get');
    r('PATCH', `${base}/{id}`, 'individual.patch');
    r('DELETE', `${base}/{id}`, 'individual.delete');
    r('GET', `${base}/resource/schema`, 'schema.resource');
    r('GET', `${base}/schema`, 'schema.individual');
    r('GET', `${base}/collection/schema`, 'schema.collection');
    for (const field of bundle.fields) {
      if (field.kind !== 'relationship' || field.internal) continue;
      // References to config entities (user roles) are shown, but have no endpoints of their own.
      if (!model.entityTypes[field.target!.entityType]) continue;
      r('GET', `${base}/resource/relationships/${field.name}/related/schema`, 'schema.related', field.name);
      r('GET', `${base}/{id}/${field.name}`, 'related.get', field.name);
      r('GET', `${base}/{id}/relationships/${field.name}`, 'relationship.get', field.name);
      if (!field.readOnly) {
        r('POST', `${base}/{id}/relationships/${field.name}`, 'relationship.post', field.name);
        r('PATCH', `${base}/{id}/relationships/${field.name}`, 'relationship.patch', field.name);
        r('DELETE', `${base}/{id}/relationships/${field.name}`, 'relationship.delete', field.name);
      }
      if ((field.type === 'file' || field.type === 'image') && !field.readOnly) {
        r('POST', `${base}/${field.name}`, 'file.uploadNew', field.name);
        r('POST', `${base}/{id}/${field.name}`, 'file.upload', field.name);
      }
    }
  }
  return routes;
}

export function emitRoutes(model: DataModel): FileMap {
  const project = new Project({ useInMemoryFileSystem: true });
  const file = project.createSourceFile('routes.ts', '', { overwrite: true });
  file.insertStatements(0, `// ${STAMP}`);
  file.addImportDeclaration({
    moduleSpecifier: '../runtime/public.ts',
    namedImports: ['RouteEntry'],
    isTypeOnly: true,
  });
  const entries = routeEntries(model);
  file.addVariableStatement({
    isExported: true,
    declarationKind: VariableDeclarationKind.Const,
    docs: [
      'Every resource route: method, path (with `{id}` for the UUID), the shared handler, and the resource type it serves.',
    ],
    declarations: [
      {
        name: 'routes',
        type: 'readonly RouteEntry[]',
        initializer: (writer) => {
          writer.write('[').newLine();
          writer.indent(() => {
            for (const e of entries) writer.writeLine(`${JSON.stringify(e).replace(/"(\w+)":/g, '$1: ')},`);
          });
          writer.write(']');
        },
      },
    ],
  });
  file.formatText({ indentSize: 2 });
  return new Map([['routes.ts', file.getFullText()]]);
}
