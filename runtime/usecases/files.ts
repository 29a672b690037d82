/**
 * Files (spec "Files"): a file's record comes into being only with its bytes. The face receives
 * the bytes with no transaction open (a slow client holds up nobody) and hands them here; the
 * commands place the file under its name and create its record in one short transaction, and
 * remove what they placed if it fails. Attaching a file to a record's field is a write of the
 * record, as an update is: locked, `ifMatch` compared, access checked (RecordCommands).
 */
import type { ResourceType } from '../model/registry.ts';
import type { FieldDescriptor } from '../model/descriptor.ts';
import type { Principal } from '../access/principal.ts';
import { assertMayOnType } from '../access/policy.ts';
import { mimeOf, type FileStore } from '../files/storage.ts';
import type { Db, ItemValue, Reference } from '../storage/records.ts';
import type { EntityService } from '../entities/service.ts';
import { ApiError } from '../errors.ts';
import type { RecordCommands, Present, Saved } from './records.ts';
import { staleVersion, type IfMatch } from './if-match.ts';
import type { ModelRegistry } from '../model/registry.ts';
import { write } from '../storage/transactions.ts';

/** Bytes received to a temporary file, not yet placed. */
export interface ReceivedFile {
  tmp: string;
  size: number;
  /** The name the client gave (its extension already checked against the field's). */
  filename: string;
}

export class FileCommands {
  constructor(
    private readonly registry: ModelRegistry,
    private readonly records: RecordCommands,
    private readonly entities: EntityService,
    private readonly files: FileStore,
  ) {}

  private fileType(): ResourceType {
    const rt = this.registry.get('file--file');
    if (!rt) throw new ApiError(404, 'Files are not available.');
    return rt;
  }

  /** Before any byte is read: may the caller upload files for `rt`'s fields at all. */
  assertMayUpload(principal: Principal, rt: ResourceType): void {
    assertMayOnType(principal, rt.entityType, 'create', `files for ${rt.type}`);
  }

  /**
   * Before any byte is read: the record exists, the caller may write it and `ifMatch` still
   * names its version (all checked again, with the record locked, when the file is attached).
   */
  async assertMayAttach(
    principal: Principal,
    rt: ResourceType,
    uuid: string | undefined,
    ifMatch: IfMatch | undefined,
  ): Promise<void> {
    const db = this.records.knex;
    const before = await this.records.find(db, rt, uuid, principal);
    this.records.assertMayWrite(principal, before, 'update');
    const stale = await staleVersion(db, before, ifMatch);
    if (stale) throw stale;
  }

  /** Upload: a file of its own (temporary until a record references it), for a field of `rt`. */
  async upload<T>(
    principal: Principal,
    rt: ResourceType,
    received: ReceivedFile,
    present: Present<T>,
  ): Promise<Saved<T>> {
    this.assertMayUpload(principal, rt);
    return this.inTransaction(received, async (trx, placed) => {
      const id = await this.place(trx, received, { rt, permanent: false, principal, placed });
      return this.records.reloadedIn(trx, this.fileType(), id, present);
    });
  }

  /** Attach: a file stored and added to `field` of the record `uuid` names (the field's list grows; a single one is replaced). */
  async attach<T>(
    principal: Principal,
    rt: ResourceType,
    uuid: string | undefined,
    field: FieldDescriptor,
    received: ReceivedFile,
    input: { ifMatch?: IfMatch; present: Present<T> },
  ): Promise<Saved<T>> {
    return this.inTransaction(received, async (trx, placed) => {
      // Locked: concurrent uploads to one record each add to what the one before them saved.
      const host = await this.records.lockedForWrite(trx, principal, rt, uuid, 'update', input.ifMatch);
      const id = await this.place(trx, received, { rt, permanent: true, principal, placed });
      const ref: Reference = { targetId: id, meta: {} };
      const current = host.values.get(field.name);
      const next = field.multiple ? [...((current as ItemValue[] | undefined) ?? []), ref] : ref;
      await this.entities.update(trx, host, { values: new Map([[field.name, next]]), secrets: new Map() }, principal);
      return this.records.reloadedIn(trx, rt, host.id, input.present);
    });
  }

  /**
   * A file placed and its record made, permanent, inside a write another command opened (a quick
   * form's photo, saved with the log that names it: usecases/quick-forms.ts); its path is added to
   * `placed`, which the caller removes (`removePlaced`) if the write fails.
   */
  async placeIn(
    trx: Db,
    principal: Principal,
    rt: ResourceType,
    received: ReceivedFile,
    placed: string[],
  ): Promise<{ type: string; id: string }> {
    this.assertMayUpload(principal, rt);
    const id = await this.place(trx, received, { rt, permanent: true, principal, placed });
    const uuid = (await this.entities.store.uuidsOf(trx, 'file', [id])).get(id)!;
    return { type: this.fileType().type, id: uuid };
  }

  /** Files `placeIn` placed for a write that failed. */
  removePlaced(placed: readonly string[]): void {
    for (const path of placed) this.files.remove(path);
  }

  /**
   * Place a received file for a field of `rt` and create its record inside `trx`, `permanent`
   * when a record references it already (else temporary until one does); its path is added to
   * `placed`, so that it goes if the transaction fails.
   */
  private async place(
    trx: Db,
    received: ReceivedFile,
    {
      rt,
      permanent,
      principal,
      placed,
    }: { rt: ResourceType; permanent: boolean; principal: Principal; placed: string[] },
  ): Promise<number> {
    const path = this.files.place(received.tmp, rt.entityType.entityType, received.filename);
    placed.push(path);
    // Drupal names the file after where it was stored (renamed when the name was taken).
    const stored = path.slice(path.lastIndexOf('/') + 1);
    const values = new Map<string, ItemValue | ItemValue[]>([
      ['filename', stored],
      ['filemime', mimeOf(received.filename)],
      ['filesize', received.size],
      ['status', permanent],
      ['path', path],
    ]);
    const { id } = await this.entities.create(trx, this.fileType(), { values, secrets: new Map() }, principal);
    return id;
  }

  /** Run `work` in a transaction; on failure, remove what it placed on disk; always drop the temporary file. */
  private async inTransaction<T>(received: ReceivedFile, work: (trx: Db, placed: string[]) => Promise<T>): Promise<T> {
    const placed: string[] = [];
    try {
      return await write(this.records.knex, (trx) => work(trx, placed));
    } catch (error) {
      for (const path of placed) this.files.remove(path);
      throw error;
    } finally {
      this.files.discard(received.tmp);
    }
  }
}
