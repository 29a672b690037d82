/** The seam between the generated route table and the runtime's shared handlers. */

export type HandlerName =
  | 'collection.get'
  | 'collection.post'
  | 'individual.get'
  | 'individual.patch'
  | 'individual.delete'
  | 'related.get'
  | 'relationship.get'
  | 'relationship.post'
  | 'relationship.patch'
  | 'relationship.delete'
  | 'file.upload'
  | 'file.uploadNew'
  | 'schema.resource'
  | 'schema.individual'
  | 'schema.collection'
  | 'schema.related';

export interface RouteEntry {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Absolute path with `{id}` standing for a UUID. */
  path: string;
  handler: HandlerName;
  /** JSON:API resource type, e.g. `log--activity`. */
  resourceType: string;
  /** The relationship or file field the route is about. */
  field?: string;
}
