/** The runtime's own migrations, oldest first. Add new files at the end; never edit an applied one. */
import * as accounts from './0001_accounts.ts';

export const coreMigrations = [{ name: '0001_accounts', up: accounts.up, down: accounts.down }];
