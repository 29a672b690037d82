/**
 * The `resourceVersion` parameter (Drupal JSON:API's resource versioning, core
 * jsonapi/src/Revisions): `id:<revision id>`, `rel:latest-version` or `rel:working-copy`. Errors
 * are Drupal's: a value not shaped like `<negotiator>:<argument>` is "provided in an invalid
 * format"; an unknown negotiator, a non-integer id or another `rel` is "an invalid resource
 * version identifier". Whether the version exists is for the caller to say (404).
 */

import { badParameter } from '../../errors.ts';

export const RESOURCE_VERSION_PARAMETER = 'resourceVersion';

export type ResourceVersion =
  | { kind: 'id'; revisionId: number; identifier: string }
  | { kind: 'rel'; rel: 'latest-version' | 'working-copy'; identifier: string };

/** Drupal's ResourceVersionRouteEnhancer::VERSION_IDENTIFIER_VALIDATOR. */
const SHAPE = /^[a-z]+[a-z_]*[a-z]+:[a-zA-Z0-9-]+(:[a-zA-Z0-9-]+)*$/;

/** Parse the parameter's raw value; `undefined` (absent) gives null. */
export function parseResourceVersion(value: unknown): ResourceVersion | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || !SHAPE.test(value)) {
    const shown = typeof value === 'string' ? value : JSON.stringify(value);
    throw badParameter(
      RESOURCE_VERSION_PARAMETER,
      `A resource version identifier was provided in an invalid format: \`${shown}\``,
    );
  }
  const invalid = () =>
    badParameter(RESOURCE_VERSION_PARAMETER, `An invalid resource version identifier, \`${value}\`, was provided.`);
  const separator = value.indexOf(':');
  const negotiator = value.slice(0, separator);
  const argument = value.slice(separator + 1);
  if (negotiator === 'id') {
    if (!/^-?\d+$/.test(argument)) throw invalid();
    return { kind: 'id', revisionId: Number(argument), identifier: value };
  }
  if (negotiator === 'rel' && (argument === 'latest-version' || argument === 'working-copy')) {
    return { kind: 'rel', rel: argument, identifier: value };
  }
  throw invalid();
}
