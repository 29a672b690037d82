/** TEMPORARY: `tilth client …` commands arrive with the authorization server. */
import type { Command } from '../cli/command.ts';

export const clientCommands: Command[] = [];
