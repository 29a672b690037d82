/**
 * Emits one OpenAPI 3.1 document describing every resource type, from the same model and the same
 * resource schemas as `/api/schema` (emit/schemas.ts), for `/api/openapi.json` and `/api/docs`.
 * Bundles of optional modules carry `x-tilth-module`; the runtime leaves out those switched off.
 * URLs carry the `{base_url}` placeholder the runtime fills in.
 */
import type { BundleDescriptor, DataModel } from '../../runtime/model/descriptor.ts';
import { BASE_URL_TOKEN, resourceSchema } from './schemas.ts';
import { STAMP } from './stamp.ts';
import type { FileMap } from './descriptors.ts';

type Schema = Record<string, unknown>;

/** The resource schema with its local `#/definitions/…` references written out, as a component. */
function componentSchema(bundle: BundleDescriptor, model: DataModel): Schema {
  const full = resourceSchema(bundle, model);
  const definitions = full.definitions as Record<string, Schema>;
  const inline = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(inline);
    if (value === null || typeof value !== 'object') return value;
    const ref = (value as Schema).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/definitions/'))
      return inline(definitions[ref.slice('#/definitions/'.length)]);
    if (typeof ref === 'string') return { type: 'object', description: `See ${ref}` };
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inline(v)]));
  };
  const { $schema: _s, $id: _i, $comment: _c, definitions: _d, ...rest } = full;
  return inline(rest) as Schema;
}

const QUERY_PARAMETERS = [
  {
    name: 'filter',
    description:
      "Drupal's filter syntax: `filter[status]=done`, or conditions and groups (`filter[k][condition][path|operator|value]`). Paths may cross relationships (`asset.name`).",
    style: 'deepObject',
  },
  { name: 'sort', description: 'Comma-separated fields, `-` for descending: `sort=-timestamp,name`.' },
  {
    name: 'page',
    description: '`page[limit]` (at most 50) and `page[offset]`; follow `links.next` for the next page.',
    style: 'deepObject',
  },
  { name: 'include', description: 'Comma-separated relationship paths to include: `include=asset,quantity.units`.' },
  {
    name: 'fields',
    description: 'Sparse fieldsets per type: `fields[log--activity]=name,timestamp`.',
    style: 'deepObject',
  },
].map((p) => ({
  in: 'query',
  required: false,
  schema: p.style ? { type: 'object' } : { type: 'string' },
  ...(p.style ? { style: p.style, explode: true } : {}),
  name: p.name,
  description: p.description,
}));

const ERRORS = { $ref: '#/components/responses/Error' };

function document(schemaRef: string, { many }: { many: boolean }): Schema {
  return {
    'application/vnd.api+json': {
      schema: {
        type: 'object',
        properties: {
          data: many ? { type: 'array', items: { $ref: schemaRef } } : { $ref: schemaRef },
          included: { type: 'array' },
          links: { type: 'object' },
          meta: { type: 'object' },
        },
      },
    },
  };
}

function pathsOf(bundle: BundleDescriptor, model: DataModel): Record<string, Schema> {
  const type = model.entityTypes[bundle.entityType]!;
  const title = `${bundle.label} ${type.hasBundles ? type.label : ''}`.trim();
  const ref = `#/components/schemas/${bundle.type}`;
  const tags = [type.labelPlural];
  const module = bundle.module ? { 'x-tilth-module': bundle.module } : {};
  const id = {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The resource UUID.',
    schema: { type: 'string', format: 'uuid' },
  };
  const base = `/api/${bundle.entityType}/${bundle.bundle}`;
  const body = { required: true, content: document(ref, { many: false }) };
  return {
    [base]: {
      ...module,
      get: {
        tags,
        summary: `List ${title} resources`,
        operationId: `list:${bundle.type}`,
        parameters: QUERY_PARAMETERS,
        responses: {
          200: { description: 'A page of resources.', content: document(ref, { many: true }) },
          default: ERRORS,
        },
      },
      post: {
        tags,
        summary: `Create a ${title}`,
        operationId: `create:${bundle.type}`,
        requestBody: body,
        responses: { 201: { description: 'Created.', content: document(ref, { many: false }) }, default: ERRORS },
      },
    },
    [`${base}/{id}`]: {
      ...module,
      parameters: [id],
      get: {
        tags,
        summary: `Get one ${title}`,
        operationId: `get:${bundle.type}`,
        parameters: QUERY_PARAMETERS.filter((p) => p.name === 'include' || p.name === 'fields'),
        responses: { 200: { description: 'The resource.', content: document(ref, { many: false }) }, default: ERRORS },
      },
      patch: {
        tags,
        summary: `Change a ${title}`,
        operationId: `update:${bundle.type}`,
        requestBody: body,
        responses: {
          200: { description: 'The changed resource.', content: document(ref, { many: false }) },
          default: ERRORS,
        },
      },
      delete: {
        tags,
        summary: `Delete a ${title}`,
        operationId: `delete:${bundle.type}`,
        responses: { 204: { description: 'Deleted.' }, default: ERRORS },
      },
    },
  };
}

export function openApiDocument(model: DataModel): Schema {
  const paths: Record<string, Schema> = {};
  const schemas: Record<string, Schema> = {};
  for (const bundle of model.bundles) {
    Object.assign(paths, pathsOf(bundle, model));
    schemas[bundle.type] = {
      ...componentSchema(bundle, model),
      ...(bundle.module ? { 'x-tilth-module': bundle.module } : {}),
    };
  }
  return {
    openapi: '3.1.0',
    $comment: STAMP,
    info: {
      title: 'Tilth: the farmOS 2.x API',
      version: '2.x',
      description:
        'JSON:API resources of a farm (logs, assets, quantities, terms, users, files) as farmOS 2.x serves them. Authenticate with OAuth 2.0 (the default public client is `farm`); write with `Content-Type: application/vnd.api+json`.',
    },
    servers: [{ url: BASE_URL_TOKEN }],
    security: [{ oauth2: [] }],
    paths,
    components: {
      schemas,
      responses: {
        Error: {
          description:
            'A JSON:API error document: `errors[]` with `status`, `title`, `detail` naming the field or parameter, and `source`.',
          content: {
            'application/vnd.api+json': {
              schema: { type: 'object', properties: { errors: { type: 'array', items: { type: 'object' } } } },
            },
          },
        },
      },
      securitySchemes: {
        oauth2: {
          type: 'oauth2',
          flows: {
            password: {
              tokenUrl: `${BASE_URL_TOKEN}/oauth/token`,
              refreshUrl: `${BASE_URL_TOKEN}/oauth/token`,
              scopes: {},
            },
            authorizationCode: {
              authorizationUrl: `${BASE_URL_TOKEN}/oauth/authorize`,
              tokenUrl: `${BASE_URL_TOKEN}/oauth/token`,
              refreshUrl: `${BASE_URL_TOKEN}/oauth/token`,
              scopes: {},
            },
            clientCredentials: { tokenUrl: `${BASE_URL_TOKEN}/oauth/token`, scopes: {} },
          },
        },
      },
    },
  };
}

export function emitOpenApi(model: DataModel): FileMap {
  return new Map([['openapi.json', `${JSON.stringify(openApiDocument(model), null, 2)}\n`]]);
}
