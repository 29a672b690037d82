/**
 * How the JSON:API face renders errors: the domain's violations name a field and an item of it
 * (errors.ts `Violation`); here each becomes an error object whose `source.pointer` is that
 * field's place in a request document, `/data/attributes/<name>[/<item>]` or
 * `/data/relationships/<name>[/data/<item>]`; an error naming the record, `/data` (or `/data/id`
 * for its identifier). A violation of the face's own wire (`/data/id`) keeps the pointer it was
 * made with. Failures of the database (storage/db-errors.ts) and the file store's refusals
 * (files/storage.ts `UploadRefused`) get their statuses here too (`domainApiError`).
 */
import {
  ApiError,
  conflict,
  databaseFailureDetail,
  badRequest,
  insufficientStorage,
  reasonPhrase,
  unsupportedMediaType,
  toJsonApiErrorDocument,
  ValidationError,
  type DatabaseFailure,
  type ErrorObject,
  type FieldRef,
  type Violation,
  type WireViolation,
} from '../errors.ts';
import { classifyDatabaseError } from '../storage/db-errors.ts';
import { UploadRefused } from '../files/storage.ts';

/** The JSON Pointer of a violation in the request document. */
export function violationPointer(v: Violation | WireViolation): string {
  if ('pointer' in v) return v.pointer;
  if (v.field === null) return '/data';
  if (v.item === undefined) return fieldPointer(v.field);
  return `${fieldPointer(v.field)}${v.field.kind === 'relationship' ? '/data' : ''}/${v.item}`;
}

/** The JSON Pointer of a field in a request document: `/data/attributes/name`, `/data/relationships/asset`. */
function fieldPointer(field: FieldRef): string {
  return `/data/${field.kind === 'relationship' ? 'relationships' : 'attributes'}/${field.name}`;
}

/** The JSON Pointer of the record in a request document (`/data`), or of its identifier (`/data/id`). */
function recordPointer(record: 'whole' | 'id'): string {
  return record === 'id' ? '/data/id' : '/data';
}

/**
 * The error objects of one error: one per violation of a 422, each with its pointer; an error
 * whose source names a field (a 403 for a field only administrators change) points at it, and one
 * naming the record (a 403 for the record, a 409 for its taken UUID) at `/data` or `/data/id`.
 */
export function errorObjects(error: ApiError): ErrorObject[] {
  if (!(error instanceof ValidationError)) {
    return error.toObjects().map((o) => {
      if (!o.source) return o;
      const { field, record, ...rest } = o.source;
      if (field) return { ...o, source: { ...rest, pointer: fieldPointer(field) } };
      if (record) return { ...o, source: { ...rest, pointer: recordPointer(record) } };
      return o;
    });
  }
  return error.violations.map((v) => ({
    status: '422',
    title: reasonPhrase(422),
    code: error.code,
    detail: v.detail,
    source: { pointer: violationPointer(v) },
  }));
}

/** Any thrown value as the JSON:API error document of this face (errors.ts `toJsonApiErrorDocument`). */
export function jsonApiErrorDocument(error: unknown, via: string): ReturnType<typeof toJsonApiErrorDocument> {
  return toJsonApiErrorDocument(error, via, errorObjects);
}

/**
 * A database failure (storage/db-errors.ts) as this face answers it, or null when the error is
 * none (a bug): a name or e-mail address taken by a racing save is the 422 accounts/names.ts
 * gives, pointing at the field; a UUID, a deleted reference or a write that collided, a 409 to
 * retry; a busy database or a statement prepared for a changed schema, a 503 with Retry-After;
 * a full disk, 507; a log the disk did not take, a 500. The web pages answer the same.
 */
export function databaseApiError(error: unknown): ApiError | null {
  const failure = classifyDatabaseError(error);
  return failure && apiErrorOf(failure);
}

function apiErrorOf(failure: DatabaseFailure): ApiError {
  const detail = databaseFailureDetail(failure);
  switch (failure.kind) {
    case 'taken':
      return new ValidationError([{ field: { kind: 'attribute', name: failure.field }, detail }]);
    case 'duplicate':
    case 'reference-gone':
    case 'collision':
      return conflict(detail);
    case 'busy':
    case 'schema-changed':
      return new ApiError(503, detail, { headers: { 'Retry-After': '1' } });
    case 'disk-full':
      return insufficientStorage();
    case 'wal-sync-failed':
      return new ApiError(500, detail);
  }
}

/**
 * A failure of a part below the faces, as this face answers it: the database's (databaseApiError)
 * or the file store's refusal of an upload (uploadApiError); null for anything else, which the
 * caller renders as it is (an ApiError) or as a 500.
 */
export function domainApiError(error: unknown): ApiError | null {
  if (error instanceof UploadRefused) return uploadApiError(error);
  return databaseApiError(error);
}

/**
 * The file store's refusal of an upload (files/storage.ts) as this face answers it: a file name
 * missing or unusable, bytes that do not decompress or a body cut short, 400; a name too long,
 * 422 (no pointer: it is a header's); an encoding it cannot read, 415; too many bytes, 413; a
 * stalled body, 408 with the connection closed (the rest of the body may never come); a full
 * disk, 507.
 */
export function uploadApiError(refusal: UploadRefused): ApiError {
  switch (refusal.kind) {
    case 'no-filename':
    case 'bad-filename':
    case 'not-decompressed':
    case 'interrupted':
      return badRequest(refusal.detail);
    case 'filename-too-long':
      return new ApiError(422, refusal.detail);
    case 'unsupported-encoding':
      return unsupportedMediaType(refusal.detail);
    case 'too-large':
      return new ApiError(413, refusal.detail);
    case 'stalled':
      return new ApiError(408, refusal.detail, { headers: { Connection: 'close' } });
    case 'disk-full':
      return insufficientStorage();
  }
}
