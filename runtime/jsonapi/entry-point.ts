/** `GET /api`: farm info and one link per resource type (farmos-behaviour.md §3.1). */
import type { Request, Response } from 'express';
import type { AppContext } from '../context.ts';
import { JSONAPI_MEDIA_TYPE, JSONAPI_VERSION, sendBytes } from './document.ts';
import { principalOf } from '../access/principal.ts';
import { shapeOf, type ApiShape } from './shape.ts';
import { LANGUAGE_PATH, LANGUAGE_TYPE } from './languages.ts';
import type { ConfigCatalogue } from './config-resources.ts';
import { BoundedMemo } from '../values/bounded-memo.ts';

const CONTENT_TYPE = `${JSONAPI_MEDIA_TYPE}; charset=utf-8`;
/** Most users whose entry point document is kept. */
const MAX_KEPT_USERS = 1_000;

/** Most bases (a shape on a port or a host name) whose documents are kept. */
const MAX_KEPT_BASES = 64;

export function entryPoint(ctx: AppContext, configs: ConfigCatalogue) {
  // One set of documents per shape and base (a 4.x host name, the 4.x port, the farm's own URL).
  const bases = new BoundedMemo<(uuid: string | null) => Buffer>(MAX_KEPT_BASES);
  return (_req: Request, res: Response): void => {
    const shape = shapeOf(res, ctx.config.baseUrl);
    const documentOf = bases.get(`${shape.name} ${shape.base}`, () => documentsFor(ctx, configs, shape));
    sendBytes(res, CONTENT_TYPE, documentOf(principalOf(res).userUuid ?? null));
  };
}

/** The entry point's documents on one base, in one shape: the same resources, the shape's `meta.farm.version`. */
function documentsFor(ctx: AppContext, configs: ConfigCatalogue, shape: ApiShape): (uuid: string | null) => Buffer {
  const base = shape.base;
  const links: Record<string, { href: string }> = { self: { href: `${base}/api` } };
  for (const rt of [...ctx.registry.resourceTypes.values()].sort((a, b) => a.type.localeCompare(b.type))) {
    links[rt.type] = { href: `${base}/api/${rt.entityType.entityType}/${rt.bundle.bundle}` };
  }
  links[LANGUAGE_TYPE] = { href: `${base}${LANGUAGE_PATH}` };
  for (const t of configs.types.values()) links[t.type] = { href: `${base}${t.path}` };
  const farm = {
    name: ctx.config.farmName,
    url: base,
    version: shape.version,
    system_of_measurement: ctx.config.systemOfMeasurement,
  };
  // The document is the same for every request but for meta.links.me: its text is built once,
  // around that one member (exactly as JSON.stringify would write the whole document).
  const head = `{"jsonapi":${JSON.stringify(JSONAPI_VERSION)},"data":[],"meta":{`;
  const tail = `"farm":${JSON.stringify(farm)}},"links":${JSON.stringify(links)}}`;
  const anonymous = Buffer.from(head + tail);
  // Each user's document as bytes, kept: clients ask for /api at every start and sync, and
  // writing it out afresh was a tenth of the request's time. Bounded, as user ids come from tokens
  // that may belong to any number of users.
  const mine = new BoundedMemo<Buffer>(MAX_KEPT_USERS);
  return (uuid) =>
    uuid
      ? mine.get(uuid, () =>
          Buffer.from(
            `${head}"links":${JSON.stringify({ me: { meta: { id: uuid }, href: `${base}/api/user/user/${uuid}` } })},${tail}`,
          ),
        )
      : anonymous;
}
