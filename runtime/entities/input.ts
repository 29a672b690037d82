/**
 * What a save hands to the entity layer, whichever face read it (JSON:API documents today): the
 * values of the fields sent, already coerced, and the passwords sent, still in the clear.
 */
import type { ItemValue } from '../storage/records.ts';

/** A password sent: the new one, and the current one when users change their own. */
export type Secret = { value: string; existing?: string };

export interface EntityInput {
  /** The UUID the client chose for a new record, if any. */
  id?: string;
  /** Field name → new value, for every submitted, writable field. */
  values: Map<string, ItemValue | ItemValue[]>;
  /** Submitted values of write-only fields (passwords), by field name. */
  secrets: ReadonlyMap<string, Secret>;
}
