import { EXIT_FAILED } from './errors';
import { processStreams } from './io/streams';
import { reportError, run } from './program';

const streams = processStreams();

// A closed pipe (`policygen explain ... | head`) ends the output, not in an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    process.exit(EXIT_FAILED);
  });
}
// Whatever escapes a command still ends as one line, never as a stack trace.
process.on('uncaughtException', (error) => process.exit(reportError(error, streams)));
process.on('unhandledRejection', (error) => process.exit(reportError(error, streams)));

void run(process.argv.slice(2), streams).then((status) => {
  process.exitCode = status;
});
