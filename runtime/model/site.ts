/**
 * The shape of a site folder's generated output (TILTH_SITE_DIR, default site/): the farm's own
 * bundles and modules, generated apart from Tilth's generated/ so that an upgrade never touches a
 * file the farm wrote, with a migration series of its own. It is JSON, not TypeScript: it is read
 * wherever the folder is, without importing code from outside the checkout.
 *
 *   <site>/definitions/<entity type>/<bundle>.yaml     the farm's bundles (always on)
 *   <site>/definitions/modules/<module>/…              the farm's optional modules (TILTH_MODULES)
 *   <site>/generated/model.json                        what the runtime loads (this shape)
 *   <site>/generated/schemas/<type>.json               their resource schemas
 *   <site>/generated/openapi.json                      their part of the OpenAPI document
 *   <site>/generated/ui/<type>.json                    their web interface (model/ui.ts)
 *   <site>/generated/migrations/NNNN_<slug>.json       their migrations: { "ops": SchemaOp[] }
 */
import type { BundleDescriptor, ModuleDescriptor } from './descriptor.ts';
import type { RouteEntry } from './routes.ts';

export interface SiteModelFile {
  $comment: string;
  /** modelFingerprint() of Tilth's own model this output was generated against. */
  core: string;
  bundles: BundleDescriptor[];
  modules: ModuleDescriptor[];
  routes: RouteEntry[];
  /** The site's migrations, oldest first, each with the checksum of its file as written. */
  migrations: Array<{ name: string; checksum: string }>;
}

/** The migrations of the site's series are recorded as `site/<name>`, Tilth's own as `model/<name>` and `core/<name>`. */
export const SITE_SERIES = 'site';
