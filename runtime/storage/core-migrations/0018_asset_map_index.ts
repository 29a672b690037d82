/**
 * The farm map's index of assets (farm/map-features.ts): each asset's bounding box, then its
 * centroid, bundle, status, is_fixed and id. A view's count of fixed assets and its clusters (a count
 * and a mean position per cell of a grid) are then read from this index alone, never from the
 * asset rows: on the bench's farm of 30,000 fields (bench/map.ts, row M1) the whole farm's view
 * read every one of the 30,000 rows twice, in the order of the box index, once to count them and
 * once to cluster them.
 *
 * A B-tree, not an R-tree (SQLite's rtree virtual table, PostgreSQL's GiST on a box): a view
 * ranges over `left` and tests the other three sides in the index, which reads a fraction of a
 * farm's entries; an R-tree would find a small view's entries sooner, but it would still send the
 * aggregates to the rows for the other columns, and it would be a second copy of the geometry to
 * keep in step on every save (triggers on SQLite), on both databases. The generated box index
 * (asset_intrinsic_geometry_bbox_idx) stays: the model's migrations own it.
 *
 * Nothing is made when the asset table has not the columns (a model without them).
 */
import type { Knex } from 'knex';

// The columns as the data model names them today, written out: a migration does not change after
// it is applied, whatever the model's code does.
const COLUMNS = [
  'intrinsic_geometry__left',
  'intrinsic_geometry__right',
  'intrinsic_geometry__bottom',
  'intrinsic_geometry__top',
  'intrinsic_geometry__lon',
  'intrinsic_geometry__lat',
  'bundle',
  'status',
  'is_fixed',
  // Last, for PostgreSQL, whose indexes hold no row id of their own (SQLite's hold the rowid).
  'id',
];

export async function up(knex: Knex): Promise<void> {
  if (!(await knex.schema.hasTable('asset'))) return;
  for (const column of COLUMNS) if (!(await knex.schema.hasColumn('asset', column))) return;
  await knex.schema.alterTable('asset', (t) => {
    t.index(COLUMNS, 'asset_map_idx');
  });
}

export async function down(): Promise<void> {
  throw new Error('Tilth migrations only go forward: restore a backup to go back.');
}
