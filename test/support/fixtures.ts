/**
 * Test fixtures built from the generated data model (generated/descriptors): a valid resource
 * document for every bundle, with its required relationships created first, and a small client
 * (`Api`) over the JSON:API routes. Nothing here names a bundle: what a bundle needs is read from
 * its descriptor, so a bundle added to definitions/ gets a fixture without a change here.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { model } from '../../generated/descriptors/index.ts';
import type { BundleDescriptor, FieldDescriptor } from '../../runtime/model/descriptor.ts';
import { request, JSONAPI, type ApiResponse } from './http.ts';

export { model };

/** The bundles a server started with these optional modules serves: core plus those modules. */
export function bundlesServed(modules: readonly string[] = []): BundleDescriptor[] {
  return model.bundles.filter((b) => b.module === null || modules.includes(b.module));
}

export function bundleOf(type: string): BundleDescriptor {
  const b = model.bundles.find((x) => x.type === type);
  if (!b) throw new Error(`No bundle ${type} in the generated model.`);
  return b;
}

/** `/api/<entity>/<bundle>` for a resource type. */
export function collectionPath(type: string): string {
  const [entity, bundle] = type.split('--');
  return `/api/${entity}/${bundle}`;
}

/** Attributes a client may write (not read-only, computed or internal bookkeeping). */
export function writableAttributes(bundle: BundleDescriptor): FieldDescriptor[] {
  return bundle.fields.filter((f) => f.kind === 'attribute' && !f.readOnly && !f.computed);
}

/** The attribute a test changes with PATCH: the entity type's label field when it is writable. */
export function labelField(bundle: BundleDescriptor): FieldDescriptor | undefined {
  const label = model.entityTypes[bundle.entityType]!.labelField;
  return writableAttributes(bundle).find((f) => f.name === label && (f.type === 'string' || f.type === 'string_long'));
}

/** A unique string that fits in `maxLength`. */
function uniqueText(prefix: string, maxLength = 255): string {
  return `${prefix} ${randomUUID().slice(0, 8)}`.slice(0, maxLength);
}

/** Fixed sample timestamp: 2023-11-14T22:13:20+00:00. */
export const SAMPLE_TIME = 1700000000;
export const SAMPLE_TIME_TEXT = '2023-11-14T22:13:20+00:00';

/**
 * A valid input value for one attribute, or undefined to leave it out. Fields whose value is
 * changed by farmOS's save-time rules (asset status/archived, revision messages) are left out so
 * that what is sent is what comes back.
 */
export function sampleInput(field: FieldDescriptor, bundle: BundleDescriptor): unknown {
  if (field.name === 'archived' || field.name === 'revision_log_message') return undefined;
  if (field.name === 'status' && field.type === 'list_string') return undefined; // the workflow default
  const one = (): unknown => {
    switch (field.type) {
      case 'string':
        if (field.name === 'name' && bundle.entityType === 'user') return `user_${randomUUID().slice(0, 8)}`;
        if (field.name === 'timezone') return 'Europe/Paris';
        if (field.name.endsWith('langcode')) return 'en';
        return uniqueText(`${bundle.bundle} ${field.name}`, field.maxLength);
      case 'string_long':
        return `Sample ${field.name} of ${bundle.type}`;
      case 'email':
        return `${randomUUID().slice(0, 8)}@example.com`;
      case 'uri':
        return `https://example.org/${bundle.bundle}/${field.name}`;
      case 'password':
        return 'sample-password-123';
      case 'list_string': {
        const values = field.allowedValues ?? [];
        return values.length > 1 ? values[1]!.value : values[0]?.value;
      }
      case 'boolean':
        return true;
      case 'integer':
        return Math.max(field.min ?? 0, 7);
      case 'decimal':
        return '2.5';
      case 'timestamp':
        return SAMPLE_TIME;
      case 'text_long':
        return { value: `Notes on ${bundle.type}: see https://example.com`, format: 'default' };
      case 'fraction':
        return { numerator: 3, denominator: 2 };
      case 'geofield':
        return { value: 'POLYGON ((-72.5 42.3, -72.4 42.3, -72.4 42.4, -72.5 42.4, -72.5 42.3))' };
      case 'id_tag':
        return { id: 'T-100', type: field.allowedValues?.[0]?.value ?? 'eid', location: 'Left ear' };
      default:
        return undefined;
    }
  };
  const v = one();
  if (v === undefined) return undefined;
  if (field.multiple)
    return field.type === 'list_string' && field.allowedValues && field.allowedValues.length > 2
      ? [field.allowedValues[0]!.value, field.allowedValues[2]!.value]
      : [v];
  return v;
}

/** Assert that an attribute rendered by the server is what `sent` (an input from sampleInput) means. */
export function assertRendered(field: FieldDescriptor, sent: unknown, got: unknown, where: string): void {
  if (field.type === 'password') {
    assert.equal(got, undefined, `${where}: a password is never rendered`);
    return;
  }
  if (field.multiple) {
    assert.ok(Array.isArray(got), `${where}: a multi-value attribute renders as an array, got ${JSON.stringify(got)}`);
    const items = Array.isArray(sent) ? sent : [sent];
    assert.equal(got.length, items.length, `${where}: item count`);
    items.forEach((item, i) => assertRenderedItem(field, item, got[i], `${where}[${i}]`));
    return;
  }
  assertRenderedItem(field, sent, got, where);
}

function assertRenderedItem(field: FieldDescriptor, sent: unknown, got: unknown, where: string): void {
  switch (field.type) {
    case 'timestamp':
      assert.equal(got, SAMPLE_TIME_TEXT, `${where}: timestamps render as RFC 3339 UTC with +00:00`);
      return;
    case 'text_long': {
      const s = sent as { value: string; format: string };
      const g = got as Record<string, unknown>;
      assert.equal(g?.value, s.value, `${where}.value`);
      assert.equal(g?.format, s.format, `${where}.format`);
      assert.equal(typeof g?.processed, 'string', `${where}.processed is rendered`);
      return;
    }
    case 'fraction': {
      const s = sent as { numerator: number; denominator: number };
      assert.deepEqual(
        got,
        { numerator: s.numerator, denominator: s.denominator, decimal: String(s.numerator / s.denominator) },
        where,
      );
      return;
    }
    case 'geofield': {
      const g = got as Record<string, unknown>;
      assert.equal(g?.value, (sent as { value: string }).value, `${where}.value keeps the WKT`);
      assert.equal(typeof g?.geo_type, 'string', `${where}.geo_type`);
      return;
    }
    case 'id_tag':
      assert.deepEqual(got, sent, where);
      return;
    default:
      assert.deepEqual(got, sent, where);
  }
}

/** A thin JSON:API client for tests, bound to one server and token. */
export class Api {
  constructor(
    readonly url: string,
    readonly token: string,
  ) {}

  get<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return request<T>(this.abs(path), { token: this.token, ...(headers ? { headers } : {}) });
  }

  post<T = any>(path: string, json: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return request<T>(this.abs(path), { method: 'POST', token: this.token, json, ...(headers ? { headers } : {}) });
  }

  patch<T = any>(path: string, json: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>> {
    return request<T>(this.abs(path), { method: 'PATCH', token: this.token, json, ...(headers ? { headers } : {}) });
  }

  delete<T = any>(path: string, json?: unknown): Promise<ApiResponse<T>> {
    return request<T>(this.abs(path), { method: 'DELETE', token: this.token, ...(json !== undefined ? { json } : {}) });
  }

  /** Send raw bytes with the given method and headers (for bodies that are not JSON). */
  raw<T = any>(
    method: string,
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
  ): Promise<ApiResponse<T>> {
    return request<T>(this.abs(path), { method, token: this.token, ...(body !== undefined ? { body } : {}), headers });
  }

  private abs(path: string): string {
    return path.startsWith('http') ? path : `${this.url}${path}`;
  }

  /** POST a resource and return its resource object; fails the test unless 201. */
  async create(
    type: string,
    attributes: Record<string, unknown> = {},
    relationships: Record<string, unknown> = {},
    id?: string,
  ): Promise<any> {
    const res = await this.post(collectionPath(type), {
      data: { type, ...(id ? { id } : {}), attributes, relationships },
    });
    assert.equal(res.status, 201, `POST ${type}: ${res.text.slice(0, 600)}`);
    return res.body.data;
  }

  /** Every resource of a collection, following links.next. */
  async all(pathWithQuery: string): Promise<any[]> {
    const out: any[] = [];
    let next: string | undefined = pathWithQuery;
    while (next) {
      const res: ApiResponse = await this.get(next);
      assert.equal(res.status, 200, `GET ${next}: ${res.text.slice(0, 400)}`);
      out.push(...res.body.data);
      next = res.body.links?.next?.href;
    }
    return out;
  }
}

/** An identifier `{type, id}` of a resource object. */
export function ref(resource: { type: string; id: string }): { type: string; id: string } {
  return { type: resource.type, id: resource.id };
}

export interface Fixture {
  type: string;
  attributes: Record<string, unknown>;
  relationships: Record<string, { data: unknown }>;
}

/**
 * A valid document body for `type`: the label and every required attribute; with `full`, every
 * writable attribute (see sampleInput). Required relationships are filled with records created
 * first (recursively, from their own fixtures).
 */
export async function buildFixture(
  api: Api,
  type: string,
  options: { full?: boolean; modules?: readonly string[] } = {},
): Promise<Fixture> {
  const bundle = bundleOf(type);
  const served = new Set(bundlesServed(options.modules ?? []).map((b) => b.type));
  const attributes: Record<string, unknown> = {};
  for (const field of writableAttributes(bundle)) {
    const wanted =
      options.full ||
      field.required ||
      field === labelField(bundle) ||
      field.type === 'password' ||
      (bundle.entityType === 'user' && field.name === 'mail');
    if (!wanted) continue;
    const v = sampleInput(field, bundle);
    if (v !== undefined) attributes[field.name] = v;
  }
  const relationships: Record<string, { data: unknown }> = {};
  for (const field of bundle.fields) {
    if (field.kind !== 'relationship' || !field.required || field.readOnly || field.computed) continue;
    const targets = model.bundles.filter(
      (b) =>
        b.entityType === field.target!.entityType &&
        served.has(b.type) &&
        (!field.target!.bundles || field.target!.bundles.includes(b.bundle)),
    );
    assert.ok(targets.length, `${type}.${field.name}: no served bundle can be referenced`);
    const target = await createFixture(api, targets[0]!.type, { modules: options.modules });
    relationships[field.name] = { data: field.multiple ? [ref(target)] : ref(target) };
  }
  return { type, attributes, relationships };
}

/** Create a record of `type` from its fixture and return the created resource object. */
export async function createFixture(
  api: Api,
  type: string,
  options: { full?: boolean; modules?: readonly string[]; id?: string } = {},
): Promise<any> {
  const f = await buildFixture(api, type, options);
  return api.create(type, f.attributes, f.relationships, options.id);
}

/** The JSON:API media type, re-exported for tests that set headers by hand. */
export { JSONAPI };
