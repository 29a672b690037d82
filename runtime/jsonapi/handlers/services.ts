/**
 * The pieces every JSON:API handler uses, over the farm's services graph (context.ts) and its
 * commands (usecases/commands.ts): each piece with one job (reading requests, finding records the
 * caller may touch, writing documents, loading, serialising, reading input, saving). One per
 * farm (`JsonApiServices.of`): the handlers and the web pages share it.
 */
import type { AppContext } from '../../context.ts';
import type { RecordLoader } from '../../farm/loader.ts';
import { Serializer } from '../serialize.ts';
import { InputReader } from '../input.ts';
import type { EntityService } from '../../entities/service.ts';
import { ConfigCatalogue } from '../config-resources.ts';
import { RequestReader } from './requests.ts';
import { RecordAccess } from './record-access.ts';
import { DocumentWriter } from './documents.ts';
import type { RecordCommands } from '../../usecases/records.ts';
import { farmCommands } from '../../usecases/commands.ts';
import type { Response } from 'express';
import { shapeOf, type ApiShape } from '../shape.ts';

/** Each farm's one JsonApiServices, by the farm's context (host/farm.ts builds one per farm). */
const byFarm = new WeakMap<AppContext, JsonApiServices>();

export class JsonApiServices {
  /** The farm's JSON:API parts, built on first use: every handler and web page of the farm shares them. */
  static of(ctx: AppContext): JsonApiServices {
    let services = byFarm.get(ctx);
    if (!services) byFarm.set(ctx, (services = new JsonApiServices(ctx)));
    return services;
  }

  readonly loader: RecordLoader;
  readonly serializer: Serializer;
  readonly input: InputReader;
  readonly entities: EntityService;
  /** Log types, vocabularies, roles… served read-only (config-resources.ts). */
  readonly configs: ConfigCatalogue;
  readonly requests: RequestReader;
  /** The commands on records every face runs (usecases/records.ts): view, create, update, delete. */
  readonly commands: RecordCommands;
  readonly records: RecordAccess;
  readonly documents: DocumentWriter;

  constructor(readonly ctx: AppContext) {
    // The farm's services graph, built once per farm (context.ts): every face and command shares it.
    this.loader = ctx.services.loader;
    this.serializer = new Serializer(ctx);
    this.input = new InputReader(ctx.registry);
    this.configs = new ConfigCatalogue(ctx);
    this.entities = ctx.services.entities;
    this.requests = new RequestReader(ctx);
    this.commands = farmCommands(ctx).records;
    this.records = new RecordAccess(ctx.db.knex, this.loader, this.requests, this.commands);
    this.documents = new DocumentWriter(ctx, this.loader, this.serializer, this.configs);
  }

  /** The request's API shape and the base of its links (http/shape-choice.ts chose it). */
  shape(res: Response): ApiShape {
    return shapeOf(res, this.ctx.config.baseUrl);
  }

  get knex() {
    return this.ctx.db.knex;
  }
}
