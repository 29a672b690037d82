/**
 * Reads definitions/ into plain objects, keeping each file's YAML document so that every later
 * check can point at a line. Meta-schema violations become plain sentences here.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { LineCounter, parseDocument, isMap, isPair, isScalar, type Document } from 'yaml';
import metaSchema from './meta-schema.json' with { type: 'json' };
import { DefinitionError, DefinitionErrors, shownPath } from './errors.ts';
import type { BundleFile, EntityTypeFile, ModuleFile, QuickFormFile } from '../generated/meta-schema.ts';

export type FileKind = 'bundleFile' | 'entityTypeFile' | 'moduleFile' | 'quickFormFile';
export type Origin = 'core' | 'site';

interface SourceBase {
  /** Path relative to the project root, as shown in messages. */
  path: string;
  /** The module folder this file belongs to, or null for core. */
  module: string | null;
  /** Tilth's own definitions/, or the farm's site folder (TILTH_SITE_DIR), whose output is generated apart. */
  origin: Origin;
  /** Line of the node at a JSON path (keys and indexes), or of its nearest existing parent; `atKey`: of the path's last key, not its value. */
  lineOf(path: Array<string | number>, options?: { atKey?: boolean }): number | undefined;
}

/** A definition file that passed the meta-schema, its data typed by the types generated from it. */
export type SourceFile = SourceBase &
  (
    | { kind: 'bundleFile'; data: BundleFile }
    | { kind: 'entityTypeFile'; data: EntityTypeFile }
    | { kind: 'moduleFile'; data: ModuleFile }
    | { kind: 'quickFormFile'; data: QuickFormFile }
  );

const ajv = new Ajv({ allErrors: true, strict: false });
ajv.addSchema(metaSchema);
const validators = {
  bundleFile: ajv.getSchema(`${metaSchema.$id}#/definitions/bundleFile`)!,
  entityTypeFile: ajv.getSchema(`${metaSchema.$id}#/definitions/entityTypeFile`)!,
  moduleFile: ajv.getSchema(`${metaSchema.$id}#/definitions/moduleFile`)!,
  quickFormFile: ajv.getSchema(`${metaSchema.$id}#/definitions/quickFormFile`)!,
};

function listYaml(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) out.push(...listYaml(full));
    else if (name.endsWith('.yaml') || name.endsWith('.yml')) out.push(full);
  }
  return out;
}

/** What a file is, from its path inside a definitions folder (core's or the site's). */
function kindOf(inside: string[]): { kind: FileKind; module: string | null } {
  if (inside[0] === 'modules') {
    const module = inside[1] ?? null;
    if (inside.length === 3 && /^module\.ya?ml$/.test(inside[2]!)) return { kind: 'moduleFile', module };
    if (inside[2] === 'quick') return { kind: 'quickFormFile', module };
    return { kind: 'bundleFile', module };
  }
  if (inside[0] === 'entity-types') return { kind: 'entityTypeFile', module: null };
  // Quick forms (issue 42 §2): definitions/quick/<name>.yaml, a module's quick/<name>.yaml.
  if (inside[0] === 'quick') return { kind: 'quickFormFile', module: null };
  return { kind: 'bundleFile', module: null };
}

function lineFinder(doc: Document, counter: LineCounter) {
  return (path: Array<string | number>, { atKey = false }: { atKey?: boolean } = {}): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const prefix = path.slice(0, n);
      if (atKey && n === path.length && n > 0) {
        const parent = doc.getIn(prefix.slice(0, -1), true);
        if (isMap(parent)) {
          const pair = parent.items.find(
            (p) => isPair(p) && isScalar(p.key) && p.key.value === prefix[prefix.length - 1],
          );
          const range = pair && isScalar(pair.key) ? pair.key.range : undefined;
          if (range) return counter.linePos(range[0]).line;
        }
      }
      const node = n === 0 ? doc.contents : doc.getIn(prefix, true);
      const range = (node as { range?: [number, number, number] } | undefined)?.range;
      if (range) return counter.linePos(range[0]).line;
    }
    return undefined;
  };
}

/** Turn one ajv error into a sentence a module author understands. */
function describe(error: ErrorObject, data: unknown): { path: Array<string | number>; sentence: string; key: boolean } {
  const path = error.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  const where = describePath(path);
  const value = path.reduce<any>((v, k) => (v == null ? v : v[k]), data);
  switch (error.keyword) {
    case 'additionalProperties': {
      const extra = (error.params as { additionalProperty: string }).additionalProperty;
      return {
        path: [...path, extra],
        key: true,
        sentence: `${where}unknown key "${extra}". Check the spelling against definitions/README.md.`,
      };
    }
    case 'required':
      return {
        path,
        key: false,
        sentence: `${where}missing required key "${(error.params as { missingProperty: string }).missingProperty}".`,
      };
    case 'enum': {
      const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.join(', ');
      const last = path[path.length - 1];
      if (last === 'type')
        return { path, key: false, sentence: `${where}unknown field type "${value}". Field types are: ${allowed}.` };
      return { path, key: false, sentence: `${where}"${value}" is not allowed here. Use one of: ${allowed}.` };
    }
    case 'pattern':
    case 'maxLength':
      if ((error.params as { pattern?: string }).pattern === '^[a-z][a-z0-9_]*$' || error.keyword === 'maxLength') {
        return {
          path,
          key: false,
          sentence: `${where}"${value}" is not a machine name: use lower case letters, digits and underscores, starting with a letter, at most 32 characters.`,
        };
      }
      return {
        path,
        key: false,
        sentence: `${where}"${value}" does not match ${(error.params as { pattern: string }).pattern}.`,
      };
    case 'type':
      if (path.includes('allowed_values')) {
        return {
          path,
          key: false,
          sentence: `${where}each allowed value must be a mapping with "value" and "label" strings, e.g. { value: done, label: Done }.`,
        };
      }
      return {
        path,
        key: false,
        sentence: `${where}expected ${(error.params as { type: string }).type}, found ${Array.isArray(value) ? 'a list' : value === null ? 'nothing' : typeof value}.`,
      };
    case 'maximum':
      if (path[path.length - 1] === 'precision' || path[path.length - 1] === 'scale') {
        return {
          path,
          key: false,
          sentence: `${where}at most 15 digits: SQLite keeps a decimal as a 64-bit float, which holds 15 digits exactly, and both databases must answer the same digits.`,
        };
      }
      return { path, key: false, sentence: `${where}${error.message ?? 'is too large'}.` };
    case 'propertyNames':
      return { path, key: false, sentence: `${where}a field name is not a machine name.` };
    default:
      return { path, key: false, sentence: `${where}${error.message ?? 'is not valid'}.` };
  }
}

function describePath(path: Array<string | number>): string {
  if (path[0] === 'fields' && typeof path[1] === 'string') {
    // The sentence names a key of the field itself; deeper places (allowed_values.2) are shown.
    const rest = path.slice(2);
    const tail =
      rest.length > 1
        ? ` (${rest.join('.')})`
        : rest.length === 1 && !['type'].includes(String(rest[0]))
          ? ` (${rest[0]})`
          : '';
    return `field "${path[1]}"${tail}: `;
  }
  return path.length ? `${path.join('.')}: ` : '';
}

/** A YAML parse error as a sentence: the yaml package's message, and for layout errors what usually causes them. */
function yamlSentence(code: string, message: string): string {
  if (code === 'DUPLICATE_KEY')
    return 'a key is defined twice in the same mapping (a duplicate field?). Each field name may appear once.';
  const text = message.split('\n')[0]!;
  const hint =
    code === 'TAB_AS_INDENT'
      ? ' Indent with spaces.'
      : ['BAD_INDENT', 'BLOCK_AS_IMPLICIT_KEY', 'MULTILINE_IMPLICIT_KEY', 'MISSING_CHAR', 'UNEXPECTED_TOKEN'].includes(
            code,
          )
        ? ' Check the indentation of this line and the next: the keys of one mapping start in the same column, indented with spaces.'
        : '';
  return `this is not valid YAML: ${text}.${hint}`;
}

/**
 * Read and check every definition file under `definitionsDir`. Throws DefinitionErrors listing
 * every problem found. A site folder's definitions add bundles and modules, never entity types.
 */
export function loadDefinitions(definitionsDir: string, rootDir: string, origin: Origin = 'core'): SourceFile[] {
  const files: SourceFile[] = [];
  const errors: DefinitionError[] = [];
  if (!existsSync(definitionsDir)) return files;
  for (const full of listYaml(definitionsDir)) {
    const path = shownPath(rootDir, full);
    const counter = new LineCounter();
    const doc = parseDocument(readFileSync(full, 'utf8'), {
      lineCounter: counter,
      uniqueKeys: true,
      prettyErrors: false,
    });
    if (doc.errors.length) {
      // One mistake in YAML's layout (a tab, a key indented differently from its neighbours)
      // makes the parser report several follow-on errors, some lines away and one often a false
      // "duplicate key". Report only the first syntax error, where it is; a real duplicate key
      // is reported when the file has no syntax error.
      const syntax = doc.errors.filter((e) => e.code !== 'DUPLICATE_KEY');
      const first = (syntax.length ? syntax : doc.errors).reduce((a, b) => (b.pos[0] < a.pos[0] ? b : a));
      const { line, col } = counter.linePos(first.pos[0]);
      errors.push(new DefinitionError(path, line, yamlSentence(first.code, first.message), col));
      continue;
    }
    const data = doc.toJS() as unknown;
    if (data === null || typeof data !== 'object' || Array.isArray(data)) {
      errors.push(new DefinitionError(path, 1, 'a definition file must be a mapping of keys to values.'));
      continue;
    }
    const { kind, module } = kindOf(relative(definitionsDir, full).split(sep));
    if (origin === 'site' && kind === 'entityTypeFile') {
      errors.push(
        new DefinitionError(
          path,
          1,
          "a site folder adds bundles and modules, not entity types: entity types are Tilth's own (definitions/entity-types/). Put a bundle in <entity type>/<bundle>.yaml.",
        ),
      );
      continue;
    }
    const lineOf = lineFinder(doc, counter);
    const validate = validators[kind];
    if (!validate(data)) {
      // ajv reports a oneOf/anyOf failure once per branch; keep the first error per location.
      const seen = new Set<string>();
      for (const error of validate.errors ?? []) {
        const d = describe(error, data);
        const id = d.path.join('.') + '|' + d.sentence;
        if (seen.has(id)) continue;
        seen.add(id);
        errors.push(new DefinitionError(path, lineOf(d.path, { atKey: d.key }), d.sentence));
      }
      continue;
    }
    // The meta-schema (checked just above) is what these types were generated from.
    files.push({ path, kind, module, origin, data, lineOf } as SourceFile);
  }
  if (errors.length) throw new DefinitionErrors(errors);
  return files;
}
