/** What every part of a running server shares. Created once by startServer(); nothing per-request lives here. */
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Database } from './storage/database.ts';
import type { ModelRegistry } from './model/registry.ts';
import type { GeneratedArtifacts } from './generated.ts';
import type { PasswordGuard } from './accounts/password-guard.ts';
import type { BodyLimits } from './access/body-limits.ts';

export interface AppContext {
  config: Config;
  db: Database;
  registry: ModelRegistry;
  generated: GeneratedArtifacts;
  logger: Logger;
  /** Checks passwords and counts failures per account (one count for the whole process). */
  passwords: PasswordGuard;
  /** What request bodies read into memory may cost: stall time and bytes held at once (one budget for the whole process). */
  bodies: BodyLimits;
  /** Where this process itself can be reached over loopback (set once listening); subrequests use it. */
  internalUrl: string;
}
