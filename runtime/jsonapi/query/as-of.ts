/**
 * The `as_of` parameter (Tilth's, not farmOS's): the moment at which an asset collection's
 * computed location, geometry and groups are shown and its `location` and `group` filters and
 * sorts are evaluated. `GET /api/asset/animal?filter[location.id]=<uuid>&as_of=2024-05-01T00:00:00Z`
 * lists the animals that were in that location then. Unix seconds or an ISO 8601 date-time;
 * absent means now. (The name has an underscore because JSON:API leaves names made only of a-z
 * to the spec.)
 */
import { badParameter } from '../../errors.ts';
import { parseTimestamp } from '../../values/timestamps.ts';

export const AS_OF_PARAMETER = 'as_of';

/** Parse the parameter's raw value; `undefined` (absent) gives null. */
export function parseAsOf(value: unknown): number | null {
  if (value === undefined) return null;
  const at = parseTimestamp(value);
  if (at === null)
    throw badParameter(
      AS_OF_PARAMETER,
      `${AS_OF_PARAMETER}: ${JSON.stringify(value)} is not a date and time; use Unix seconds or an ISO 8601 date-time.`,
    );
  return at;
}
