import { InputError, EXIT_OK } from '../errors';
import { PipelineApi } from '../io/pipeline-api';
import type { LagReport, StageLag } from '../io/pipeline-api';
import { isInteractive, writeLine } from '../io/streams';
import type { CommandDefinition } from './context';
import type { PipelineCommandOptions } from './pipeline-options';
import { pipelineOptions } from './pipeline-options';

interface LagOptions extends PipelineCommandOptions {
  readonly window: number;
  readonly watch?: boolean;
  readonly interval: number;
}

const milliseconds = (value: number | null): string => (value === null ? '-' : `${value} ms`);

function table(title: string, stages: readonly StageLag[]): string[] {
  const rows = stages.map((stage) => [
    stage.stage,
    String(stage.count),
    milliseconds(stage.p50),
    milliseconds(stage.p95),
    milliseconds(stage.p99),
    milliseconds(stage.max),
  ]);
  const header = [title, 'count', 'p50', 'p95', 'p99', 'max'];
  const widths = header.map((cell, column) =>
    Math.max(cell.length, ...rows.map((row) => row[column]?.length ?? 0)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0),
      )
      .join('  ');
  return [line(header), ...rows.map(line)];
}

function render(report: LagReport): string[] {
  return [
    `lag from the commit, over the last ${report.windowSeconds} s`,
    ...table('changes', report.steady),
    '',
    ...table('catch-up', report.catchUp),
  ];
}

function positive(name: string, max: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < 1 || parsed > max)
      throw new InputError(`${name}: an integer from 1 to ${max}, not ${value}`);
    return parsed;
  };
}

export const defineLag: CommandDefinition = (program, { streams, exitWith }) => {
  const command = program
    .command('lag')
    .description(
      "each stage's lag from the commit (generated, distributed, on a relay, fetched): p50/p95/p99/max",
    );
  for (const option of pipelineOptions()) command.addOption(option);
  command
    .option('--window <seconds>', 'the window the percentiles cover', positive('--window', 600), 60)
    .option('--watch', 'ask again every --interval ms until Ctrl-C')
    .option(
      '--interval <ms>',
      'the pause between two answers with --watch',
      positive('--interval', 3_600_000),
      2_000,
    )
    .action(async (options: LagOptions) => {
      const api = new PipelineApi(options.url, options.token);
      const print = async (): Promise<void> => {
        const report = await api.lag(options.window);
        if (options.json) writeLine(streams.stdout, JSON.stringify(report));
        else {
          if (options.watch && isInteractive(streams)) streams.stdout.write('\u001b[2J\u001b[H');
          for (const line of render(report)) writeLine(streams.stdout, line);
          if (options.watch) writeLine(streams.stdout, '');
        }
      };
      await print();
      if (options.watch) {
        let stop: () => void = () => undefined;
        const stopped = new Promise<void>((resolve) => (stop = resolve));
        const onSignal = (): void => stop();
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        let running = true;
        void stopped.then(() => (running = false));
        while (running) {
          await Promise.race([stopped, new Promise((resolve) => setTimeout(resolve, options.interval))]);
          if (running) await print();
        }
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
      exitWith(EXIT_OK);
    });
};
