/** The runtime's own migrations, oldest first. Add new files at the end; never edit an applied one. */
import * as accounts from './0001_accounts.ts';
import * as oauth from './0002_oauth.ts';
import * as revisionIds from './0003_revision_ids.ts';
import * as readings from './0004_data_stream_readings.ts';
import * as assetLocation from './0005_asset_location.ts';
import * as assetGroup from './0006_asset_group.ts';
import * as accountUniqueness from './0007_account_uniqueness.ts';
import * as rateLimits from './0008_rate_limits.ts';
import * as importMap from './0009_import_map.ts';
import * as sync from './0010_sync.ts';
import * as fieldKitClient from './0011_fieldkit_client.ts';
import * as importMarks from './0012_import_marks.ts';
import * as dueChanges from './0013_due_changes.ts';
import * as feedBundles from './0014_feed_bundles.ts';
import * as revisionSequences from './0015_revision_sequences.ts';
import * as savedViews from './0016_saved_views.ts';
import * as organizationRevisions from './0017_organization_revisions.ts';
import * as assetMapIndex from './0018_asset_map_index.ts';
import * as readingHours from './0019_reading_hours.ts';

export const coreMigrations = [
  { name: '0001_accounts', up: accounts.up, down: accounts.down },
  { name: '0002_oauth', up: oauth.up, down: oauth.down },
  { name: '0003_revision_ids', up: revisionIds.up, down: revisionIds.down },
  { name: '0004_data_stream_readings', up: readings.up, down: readings.down },
  { name: '0005_asset_location', up: assetLocation.up, down: assetLocation.down },
  { name: '0006_asset_group', up: assetGroup.up, down: assetGroup.down },
  { name: '0007_account_uniqueness', up: accountUniqueness.up, down: accountUniqueness.down },
  { name: '0008_rate_limits', up: rateLimits.up, down: rateLimits.down },
  { name: '0009_import_map', up: importMap.up, down: importMap.down },
  { name: '0010_sync', up: sync.up, down: sync.down },
  { name: '0011_fieldkit_client', up: fieldKitClient.up, down: fieldKitClient.down },
  { name: '0012_import_marks', up: importMarks.up, down: importMarks.down },
  { name: '0013_due_changes', up: dueChanges.up, down: dueChanges.down },
  { name: '0014_feed_bundles', up: feedBundles.up, down: feedBundles.down },
  { name: '0015_revision_sequences', up: revisionSequences.up, down: revisionSequences.down },
  { name: '0016_saved_views', up: savedViews.up, down: savedViews.down },
  { name: '0017_organization_revisions', up: organizationRevisions.up, down: organizationRevisions.down },
  { name: '0018_asset_map_index', up: assetMapIndex.up, down: assetMapIndex.down },
  { name: '0019_reading_hours', up: readingHours.up, down: readingHours.down },
];
