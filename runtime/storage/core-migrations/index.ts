/** The runtime's own migrations, oldest first. Add new files at the end; never edit an applied one. */
import * as accounts from './0001_accounts.ts';
import * as oauth from './0002_oauth.ts';

export const coreMigrations = [
  { name: '0001_accounts', up: accounts.up, down: accounts.down },
  { name: '0002_oauth', up: oauth.up, down: oauth.down },
];
