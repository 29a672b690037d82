/**
 * The pieces every JSON:API handler uses, over the farm's services graph (context.ts): each piece
 * with one job (reading requests, finding records the caller may touch, writing documents,
 * loading, serialising, reading input, saving).
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
import { RecordCommands } from '../../usecases/records.ts';

export class JsonApiServices {
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
    this.commands = new RecordCommands(ctx.db.knex, this.loader, this.entities);
    this.records = new RecordAccess(ctx.db.knex, this.loader, this.requests, this.commands);
    this.documents = new DocumentWriter(ctx, this.loader, this.serializer, this.configs);
  }

  get knex() {
    return this.ctx.db.knex;
  }
}
