/**
 * The fingerprint of Tilth's own data model, as generated/ holds it. A site folder's generated
 * output records the fingerprint of the model it was generated against (its bundles carry the
 * entity types' base fields, and its migrations follow core's), so the runtime can tell when an
 * upgrade changed Tilth's model and the site's output must be generated again.
 */
import { createHash } from 'node:crypto';
import type { DataModel } from './descriptor.ts';

export function modelFingerprint(model: DataModel): string {
  // A fixed order of the parts: the generator's object and the loaded one list their keys differently.
  return createHash('sha256')
    .update(JSON.stringify([model.entityTypes, model.bundles, model.modules]))
    .digest('hex');
}
