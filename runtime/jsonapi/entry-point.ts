/** `GET /api`: farm info and one link per resource type (farmos-behaviour.md §3.1). */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { JSONAPI_VERSION, sendDocument } from './document.ts';
import { principalOf } from '../access/principal.ts';
import { TILTH_API_VERSION } from '../version.ts';
import { LANGUAGE_PATH, LANGUAGE_TYPE } from './languages.ts';
import type { ConfigCatalogue } from './config-resources.ts';

export function entryPoint(ctx: AppContext, configs: ConfigCatalogue) {
  const base = ctx.config.baseUrl;
  const links: Record<string, { href: string }> = { self: { href: `${base}/api` } };
  for (const rt of [...ctx.registry.resourceTypes.values()].sort((a, b) => a.type.localeCompare(b.type))) {
    links[rt.type] = { href: `${base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}` };
  }
  links[LANGUAGE_TYPE] = { href: `${base}${LANGUAGE_PATH}` };
  for (const t of configs.types.values()) links[t.type] = { href: `${base}${t.path}` };
  const farm = { name: ctx.config.farmName, url: base, version: TILTH_API_VERSION, system_of_measurement: ctx.config.systemOfMeasurement };
  return (_req: Request, res: Response): void => {
    const principal = principalOf(res);
    const meta: Record<string, unknown> = {};
    if (principal.userUuid) {
      meta.links = { me: { meta: { id: principal.userUuid }, href: `${base}/api/user/user/${principal.userUuid}` } };
    }
    meta.farm = farm;
    sendDocument(res, 200, { jsonapi: JSONAPI_VERSION, data: [], meta, links });
  };
}
