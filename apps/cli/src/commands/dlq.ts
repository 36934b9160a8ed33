import { EXIT_FAILED, EXIT_OK, InputError } from '../errors';
import { PipelineApi } from '../io/pipeline-api';
import type { DeadLetter, ReplayOutcome } from '../io/pipeline-api';
import { writeLine } from '../io/streams';
import type { CommandDefinition } from './context';
import type { PipelineCommandOptions } from './pipeline-options';
import { pipelineOptions } from './pipeline-options';

interface ListOptions extends PipelineCommandOptions {
  readonly limit: number;
  readonly after?: number;
}

interface ReplayOptions extends PipelineCommandOptions {
  readonly offset?: number[];
}

function integer(name: string, min: number, max: number): (value: string, previous?: unknown) => number {
  return (value) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max)
      throw new InputError(`${name}: an integer from ${min} to ${max}, not ${value}`);
    return parsed;
  };
}

function offsets(value: string, previous: number[] | undefined): number[] {
  return [...(previous ?? []), integer('--offset', 0, Number.MAX_SAFE_INTEGER)(value)];
}

function letterLines(letter: DeadLetter): string[] {
  const origin = letter.origin
    ? `${letter.origin.topic}/${letter.origin.partition}/${letter.origin.offset}`
    : 'unknown origin';
  const state = letter.replayed
    ? `replayed ${letter.replayed.at}${letter.replayed.by ? ` by ${letter.replayed.by}` : ''}`
    : 'waiting';
  const value =
    letter.value === null
      ? '(tombstone)'
      : `${letter.value.encoding === 'base64' ? 'base64 ' : ''}${letter.value.data.slice(0, 120).replace(/\s+/g, ' ')}${
          letter.value.truncated || letter.value.data.length > 120 ? '…' : ''
        }`;
  return [
    `${letter.offset}  ${state}  from ${origin}  key ${letter.key ?? '(none)'}  ${letter.attempts ?? '?'} attempt(s)  ${letter.failedAt ?? ''}  ${letter.group ?? ''}`.trimEnd(),
    `  error  ${letter.error.split('\n')[0] ?? ''}`,
    `  value  ${value} (${letter.size} bytes)`,
  ];
}

export const defineDlq: CommandDefinition = (program, { streams, exitWith }) => {
  const dlq = program
    .command('dlq')
    .description("a running pipeline's dead letters: messages its services gave up, and their replay");

  const list = dlq
    .command('list [topic]')
    .description(
      'without a topic: every dead-letter topic and how many letters wait in it; with one (<topic> or <topic>.dlq): its letters',
    );
  for (const option of pipelineOptions()) list.addOption(option);
  list
    .option('--limit <n>', 'letters per page (1 to 500)', integer('--limit', 1, 500), 50)
    .option(
      '--after <offset>',
      'letters after this offset (the next page)',
      integer('--after', 0, Number.MAX_SAFE_INTEGER),
    )
    .action(async (topic: string | undefined, options: ListOptions) => {
      const api = new PipelineApi(options.url, options.token);
      if (topic === undefined) {
        const { topics } = await api.deadLetterTopics();
        if (options.json) writeLine(streams.stdout, JSON.stringify({ topics }, null, 2));
        else
          for (const each of topics)
            writeLine(streams.stdout, `${each.topic}  ${each.depth} waiting  ${each.total} in all`);
        exitWith(EXIT_OK);
        return;
      }
      const page = await api.deadLetters(topic, options.limit, options.after);
      if (options.json) writeLine(streams.stdout, JSON.stringify(page, null, 2));
      else {
        writeLine(streams.stdout, `${page.topic}  ${page.depth} waiting  ${page.total} in all`);
        for (const letter of page.items)
          for (const line of letterLines(letter)) writeLine(streams.stdout, line);
        if (page.next !== null) writeLine(streams.stdout, `more: --after ${page.next}`);
      }
      exitWith(EXIT_OK);
    });

  const replay = dlq
    .command('replay <topic>')
    .description(
      'republishes dead letters to the topic they came from (every one not replayed yet, or those of --offset); exit 1 if one named was not replayed',
    );
  for (const option of pipelineOptions()) replay.addOption(option);
  replay
    .option('--offset <offset>', 'a letter to replay (repeatable)', offsets)
    .action(async (topic: string, options: ReplayOptions) => {
      const api = new PipelineApi(options.url, options.token);
      const outcome: ReplayOutcome = await api.replayDeadLetters(topic, options.offset);
      if (options.json) writeLine(streams.stdout, JSON.stringify(outcome, null, 2));
      else {
        writeLine(
          streams.stdout,
          `${outcome.topic}: ${outcome.replayed.length} replayed, ${outcome.skipped.length} skipped`,
        );
        for (const each of outcome.replayed)
          writeLine(streams.stdout, `  ${each.offset}  replayed to ${each.to}`);
        for (const each of outcome.skipped)
          writeLine(streams.stdout, `  ${each.offset}  skipped: ${each.reason}`);
      }
      exitWith(options.offset && outcome.skipped.length > 0 ? EXIT_FAILED : EXIT_OK);
    });
};
