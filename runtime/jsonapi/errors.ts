/**
 * How the JSON:API face renders errors: the domain's violations name a field and an item of it
 * (errors.ts `Violation`); here each becomes an error object whose `source.pointer` is that
 * field's place in a request document, `/data/attributes/<name>[/<item>]` or
 * `/data/relationships/<name>[/data/<item>]`. A violation of the face's own wire (`/data/id`)
 * keeps the pointer it was made with.
 */
import {
  ApiError,
  reasonPhrase,
  toJsonApiErrorDocument,
  ValidationError,
  type ErrorObject,
  type FieldRef,
  type Violation,
  type WireViolation,
} from '../errors.ts';

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

/**
 * The error objects of one error: one per violation of a 422, each with its pointer; an error
 * whose source names a field (a 403 for a field only administrators change) points at it.
 */
export function errorObjects(error: ApiError): ErrorObject[] {
  if (!(error instanceof ValidationError)) {
    return error.toObjects().map((o) => {
      if (!o.source?.field) return o;
      const { field, ...rest } = o.source;
      return { ...o, source: { ...rest, pointer: fieldPointer(field) } };
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
