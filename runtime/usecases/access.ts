/** The use cases' answers about access to one record: not there (404), or not the caller's to touch (403). */
import type { ResourceType } from '../model/registry.ts';
import type { Principal } from '../access/principal.ts';
import { mayOnRecord } from '../access/policy.ts';
import type { EntityRecord } from '../storage/records.ts';
import { forbidden, notFound, type ApiError } from '../errors.ts';

/** No record of this type with this UUID (or one of another bundle). */
export function recordNotFound(rt: ResourceType, uuid: string | undefined): ApiError {
  return notFound(`There is no ${rt.type} with the id "${uuid}".`, { parameter: 'id' });
}

/** 403 unless the caller may `op` this record (after the type's permission, checked before). */
export function assertMayOnRecord(principal: Principal, record: EntityRecord, op: 'view' | 'update' | 'delete'): void {
  if (!mayOnRecord(principal, record.rt.entityType, op, record)) {
    const verb = { view: 'GET', update: 'PATCH', delete: 'DELETE' }[op];
    throw forbidden(
      `The current user is not allowed to ${verb} the selected resource (${record.rt.type} ${record.uuid}).`,
      { record: 'whole' },
    );
  }
}
