import { Command, CommanderError } from 'commander';
import packageJson from '../package.json';
import { defineBench } from './commands/bench';
import { defineDashboard } from './commands/dashboard';
import { defineLag } from './commands/lag';
import { defineStatus } from './commands/status';
import { defineExplain } from './commands/explain';
import { defineGenerate } from './commands/generate';
import { defineGraph } from './commands/graph';
import { defineDemo } from './commands/demo';
import { defineDiff } from './commands/diff';
import { defineDlq } from './commands/dlq';
import { defineStart } from './commands/start';
import { defineValidate } from './commands/validate';
import type { CommandContext } from './commands/context';
import { EXIT_FAILED, EXIT_INVALID, EXIT_OK, FleetValidationError, InputError, messageOf } from './errors';
import { indentContinuation, processStreams, writeLine } from './io/streams';
import type { Streams } from './io/streams';

export function buildProgram(context: CommandContext): Command {
  const { streams } = context;
  const program = new Command('policygen')
    .description(
      'Per-node policy bundles for a fleet: Rudder rules, directives and groups over CFEngine, ordered with Puppet relationship semantics.',
    )
    .version(packageJson.version, '-V, --version')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => streams.stdout.write(text),
      writeErr: (text) => streams.stderr.write(text),
    })
    .showHelpAfterError('(policygen --help lists the commands, policygen <command> --help their options)')
    .showSuggestionAfterError()
    .addHelpText(
      'after',
      '\nExit status: 0 success, 1 a node failed (or an unexpected error), 2 invalid input.\n' +
        'Results go to stdout; progress and logs to stderr. NO_COLOR is honoured.',
    );
  for (const define of [
    defineValidate,
    defineGenerate,
    defineExplain,
    defineGraph,
    defineBench,
    defineDemo,
    defineStart,
    defineStatus,
    defineLag,
    defineDiff,
    defineDlq,
    defineDashboard,
  ]) {
    define(program, context);
  }
  return program;
}

/** Runs the command line and returns its exit status; never throws, never prints a stack trace. */
export async function run(argv: readonly string[], streams: Streams = processStreams()): Promise<number> {
  let status = EXIT_OK;
  const program = buildProgram({ streams, exitWith: (code) => (status = code) });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return status;
  } catch (error) {
    return reportError(error, streams);
  }
}

/** Says what went wrong in a line (or one line per fleet issue) and gives the exit status. */
export function reportError(error: unknown, streams: Streams): number {
  if (error instanceof CommanderError) {
    // Commander has printed the usage error, the help or the version already.
    return error.exitCode === 0 ? EXIT_OK : EXIT_INVALID;
  }
  if (error instanceof FleetValidationError) {
    for (const issue of error.issues)
      writeLine(streams.stderr, indentContinuation(`${issue.path}: ${issue.message}`));
    writeLine(streams.stderr, `policygen: ${error.message}`);
    return EXIT_INVALID;
  }
  writeLine(streams.stderr, `policygen: ${indentContinuation(messageOf(error))}`);
  return error instanceof InputError ? EXIT_INVALID : EXIT_FAILED;
}
