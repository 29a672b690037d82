/**
 * What one Tilth process has, whatever farms it serves: its settings (config.ts ProcessSettings),
 * its logger, the budget of request bodies read into memory at once, and the ceiling on password
 * hashes computed at once (accounts/passwords.ts keeps it, one per process, with the hash cost set
 * here). Built once, by `tilth serve` (server.ts) and by every command (cli/database.ts).
 */
import type { Logger } from 'pino';
import type { ProcessSettings } from '../config.ts';
import { createLogger } from '../http/logging.ts';
import { BodyLimits } from '../access/body-limits.ts';
import { usePasswordHashCost } from '../accounts/passwords.ts';

export interface ProcessContext {
  settings: ProcessSettings;
  logger: Logger;
  /** What request bodies read into memory may cost: stall time and bytes held at once, for the whole process. */
  bodies: BodyLimits;
}

/** The process's context: new password hashes at its cost from now on, its logger (the settings' unless one is given), its body budget. */
export function createProcess(settings: ProcessSettings, options: { logger?: Logger } = {}): ProcessContext {
  usePasswordHashCost(settings.passwordHash);
  return {
    settings,
    logger: options.logger ?? createLogger(settings.logLevel, settings.logFormat),
    bodies: new BodyLimits({ stallMs: settings.bodyTimeoutSeconds * 1000, budgetBytes: settings.bodyBudgetBytes }),
  };
}
