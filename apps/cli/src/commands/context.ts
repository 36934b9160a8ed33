import type { Command } from 'commander';
import type { Streams } from '../io/streams';

/** What a command's action needs from the shell: where to write, and how to report its exit status. */
export interface CommandContext {
  readonly streams: Streams;
  readonly exitWith: (status: number) => void;
}

export type CommandDefinition = (program: Command, context: CommandContext) => void;
