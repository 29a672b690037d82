// The long kill-under-load run over three processes (issue 26): `npm run stress` writes from 16
// clients for 120 s and kills a random process every 15 s (support/kill-under-load.ts). The short
// version, one kill, runs in `npm test` on the cluster of test/api/scale-out.test.ts.
import { test } from 'node:test';
import { startCluster } from '../support/cluster.ts';
import { killUnderLoad } from '../support/kill-under-load.ts';
import { FULL, SCALE, report } from './scale.ts';

const longOnPostgres = {
  skip: !process.env.DATABASE_URL
    ? 'several processes share a PostgreSQL database only'
    : !FULL
      ? 'the short version runs in test/api/scale-out.test.ts'
      : false,
};

test(
  `three processes, ${SCALE.processes.clients} writers for ${SCALE.processes.seconds} s, a process killed every ${SCALE.processes.killEvery} s: nothing acknowledged lost or doubled, no 5xx`,
  longOnPostgres,
  async (t) => {
    const cluster = await startCluster();
    t.after(() => cluster.close());
    report('processes', await killUnderLoad(cluster, SCALE.processes));
  },
);
