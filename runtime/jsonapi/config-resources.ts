/**
 * Drupal's configuration entities that records point at, served read-only as JSON:API resources
 * (issue 8 item 9): `asset_type--asset_type`, `log_type--log_type`, `quantity_type--quantity_type`
 * (a bundle each), `taxonomy_vocabulary--taxonomy_vocabulary` (a vocabulary each),
 * `user_role--user_role` (a role each) and Field Kit's `field_module--field_module` (those
 * installed, storage/field-modules.ts). Every record's `log_type`, `vid`, `roles`… relationship
 * names one of them by the same identifier (model/config-entities.ts), so its links resolve and
 * `include=log_type` works. They are data known at start: built once, never queried (field
 * modules excepted: a small table, read when listed).
 */
import express, { type Request, type Response, type Router } from 'express';
import type { AppContext } from '../context.ts';
import type { EntityTypeDescriptor } from '../model/descriptor.ts';
import type { Permission } from '../access/roles.ts';
import { ROLES, ROLE_LABELS, ROLE_PERMISSIONS } from '../access/roles.ts';
import { bundleConfigType, bundleIdentifier, configIdentifier } from '../model/config-entities.ts';
import { principalOf, type Principal } from '../access/principal.ts';
import { requireAuthenticated } from '../access/policy.ts';
import { badParameter, forbidden, methodNotAllowed, notFound } from '../errors.ts';
import { JSONAPI_VERSION, sendDocument } from './document.ts';
import { listFieldModules } from '../storage/field-modules.ts';
import { parseJsonApiQuery, type FilterGroup } from './query/index.ts';

export interface ConfigResource {
  type: string;
  id: string;
  links: { self: { href: string } };
  attributes: Record<string, unknown>;
}

interface ConfigType {
  type: string;
  path: string;
  /** The permission that lets a caller read them. */
  permission: Permission;
  /** The attribute holding the machine name, the one filter these collections take. */
  idAttribute: string;
  resources: ConfigResource[];
  /** For the one kind that changes while the server runs (field modules): its resources, read when asked. */
  load?: () => Promise<ConfigResource[]>;
}

const WORKFLOWS: Record<string, string> = { asset: 'asset_default', log: 'log_default' };

/** Every configuration resource type of the served model, with its resources. */
export class ConfigCatalogue {
  readonly types = new Map<string, ConfigType>();
  private readonly byId = new Map<string, ConfigResource>();

  constructor(ctx: AppContext) {
    const base = ctx.config.baseUrl;
    const add = (
      type: string,
      permission: Permission,
      idAttribute: string,
      items: Array<{ id: string; attributes: Record<string, unknown> }>,
    ) => {
      const [entity] = type.split('--');
      const path = `/api/${entity}/${entity}`;
      const resources = items.map((item) => ({
        type,
        id: item.id,
        links: { self: { href: `${base}${path}/${item.id}` } },
        attributes: { ...item.attributes },
      }));
      this.types.set(type, { type, path, permission, idAttribute, resources });
      for (const r of resources) this.byId.set(`${type}:${r.id}`, r);
    };
    for (const et of Object.values(ctx.registry.model.entityTypes) as EntityTypeDescriptor[]) {
      const type = bundleConfigType(et);
      if (!type) continue;
      const bundles = ctx.registry.bundlesOf(et.entityType);
      if (et.bundleKey === 'vid') {
        add(
          type,
          'taxonomy:view',
          'drupal_internal__vid',
          bundles.map((rt) => ({
            id: bundleIdentifier(et, rt.bundle.bundle)!.id,
            attributes: {
              langcode: 'en',
              status: true,
              drupal_internal__vid: rt.bundle.bundle,
              name: rt.bundle.label,
              description: rt.bundle.description ?? '',
              weight: 0,
            },
          })),
        );
      } else {
        add(
          type,
          'content:view',
          'drupal_internal__id',
          bundles.map((rt) => ({
            id: bundleIdentifier(et, rt.bundle.bundle)!.id,
            attributes: {
              langcode: 'en',
              status: true,
              drupal_internal__id: rt.bundle.bundle,
              label: rt.bundle.label,
              description: rt.bundle.description ?? '',
              ...(WORKFLOWS[et.entityType] ? { workflow: WORKFLOWS[et.entityType] } : {}),
              ...(et.entityType === 'log' ? { name_pattern: et.namePattern ?? '' } : {}),
              new_revision: true,
            },
          })),
        );
      }
    }
    // Field Kit loads its field modules from here: those `tilth fieldkit add-module` installed,
    // read from the database when asked (the command may run beside the server).
    add('field_module--field_module', 'content:view', 'drupal_internal__id', []);
    const modulePath = '/api/field_module/field_module';
    this.types.get('field_module--field_module')!.load = async () =>
      (await listFieldModules(ctx.db.knex)).map((m) => {
        const id = configIdentifier('field_module', m.name).id;
        return {
          type: 'field_module--field_module',
          id,
          links: { self: { href: `${base}${modulePath}/${id}` } },
          attributes: {
            langcode: 'en',
            status: true,
            dependencies: [],
            drupal_internal__id: m.name,
            label: m.label,
            description: m.description,
            library: `fieldkit/${m.name}`,
          },
        };
      });
    add(
      'user_role--user_role',
      'user:view',
      'drupal_internal__id',
      ROLES.map((role, weight) => ({
        id: configIdentifier('user_role', role).id,
        attributes: {
          langcode: 'en',
          status: true,
          drupal_internal__id: role,
          label: ROLE_LABELS[role],
          weight,
          is_admin: role === 'administrator',
          permissions: [...ROLE_PERMISSIONS[role]],
        },
      })),
    );
  }

  /** The resource an identifier names, if the principal may read it. */
  find(principal: Principal, type: string, id: string): ConfigResource | null {
    const t = this.types.get(type);
    if (!t || !principal.permissions.has(t.permission)) return null;
    return this.byId.get(`${type}:${id}`) ?? null;
  }

  /** Where routes() answers: the collection path of each configuration type. */
  paths(): string[] {
    return [...this.types.values()].map((t) => t.path);
  }

  routes(ctx: AppContext): Router {
    const router = express.Router();
    for (const t of this.types.values()) {
      const check = (req: Request, res: Response) => {
        const principal = principalOf(res);
        requireAuthenticated(principal);
        if (!principal.permissions.has(t.permission))
          throw forbidden(
            `The current user is not allowed to GET ${t.type} resources: it needs the "${t.permission}" permission.`,
          );
        const i = req.originalUrl.indexOf('?');
        return parseJsonApiQuery(i < 0 ? '' : req.originalUrl.slice(i + 1));
      };
      router.get(t.path, async (req, res) => {
        const query = check(req, res);
        const wanted = machineNameFilter(query.filter, t.idAttribute);
        const resources = t.load ? await t.load() : t.resources;
        const data = wanted === null ? resources : resources.filter((r) => r.attributes[t.idAttribute] === wanted);
        sendDocument(res, 200, {
          jsonapi: JSONAPI_VERSION,
          data,
          links: { self: { href: `${ctx.config.baseUrl}${req.originalUrl}` } },
        });
      });
      router.get(`${t.path}/:id`, async (req, res) => {
        check(req, res);
        const hit = t.load
          ? (await t.load()).find((r) => r.id === req.params.id)
          : this.byId.get(`${t.type}:${req.params.id}`);
        if (!hit) throw notFound(`There is no ${t.type} with the id "${req.params.id}".`, { parameter: 'id' });
        sendDocument(res, 200, {
          jsonapi: JSONAPI_VERSION,
          data: hit,
          links: { self: { href: `${ctx.config.baseUrl}${req.originalUrl}` } },
        });
      });
      router.all([t.path, `${t.path}/:id`], (req) => {
        throw methodNotAllowed(req.method, ['GET']);
      });
    }
    return router;
  }
}

/** The one filter configuration collections take: their machine name (`filter[drupal_internal__id]=activity`). */
function machineNameFilter(filter: FilterGroup, attribute: string): string | null {
  if (!filter.members.length) return null;
  const [only] = filter.members;
  if (
    filter.members.length === 1 &&
    only!.kind === 'condition' &&
    only!.path === attribute &&
    only!.operator === '=' &&
    typeof only!.value === 'string'
  )
    return only!.value;
  throw badParameter(
    'filter',
    `Configuration resources can be filtered by ${attribute} only (filter[${attribute}]=<machine name>).`,
  );
}
