import { access, readdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Presets, SingleBar } from 'cli-progress';
import { startTestInfrastructure } from '@policygen/testing-infra';
import { InputError, describeFsError } from '../../errors';
import { isInteractive, noColor, writeLine } from '../../io/streams';
import type { Streams } from '../../io/streams';
import type { PipelineProgress } from './pipeline-bench';
import { runPipelineBench } from './pipeline-bench';
import { formatPipelineTable } from './report';

export interface PipelineCommandOptions {
  readonly nodes: number;
  readonly seed: number;
  readonly rate: number;
  readonly seconds: number;
  /** Seconds of the same load before the measured one. */
  readonly warmUpSeconds: number;
  readonly generators: number;
  /** Another build's tree (a checkout after `npm run build`): the last generator runs its generator. */
  readonly compareGenerator?: string;
  readonly out: string;
  /** Where the services' CPU profiles go, one directory per service. */
  readonly profile?: string;
  /** Options given to every service's `node` (`--node-option`). */
  readonly nodeOptions?: readonly string[];
}

/**
 * `policygen bench --pipeline`: provides Kafka, Redis and Postgres as the test harness does (those
 * of KAFKA_BROKERS, REDIS_URL and DATABASE_URL when set), runs the pipeline benchmark on them and
 * writes its report. Ctrl-C stops and cleans everything it started.
 */
export async function runPipelineCommand(options: PipelineCommandOptions, streams: Streams): Promise<void> {
  const progress = progressOn(streams);
  const controller = new AbortController();
  const interrupt = (): void => {
    progress.log('interrupted: stopping the services and cleaning up (Ctrl-C again to leave at once)');
    controller.abort();
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  };
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  const profileDir = options.profile === undefined ? undefined : resolve(options.profile);
  const compareGeneratorBundle =
    options.compareGenerator === undefined ? undefined : await otherGenerator(options.compareGenerator);
  if (compareGeneratorBundle !== undefined && options.generators < 2)
    throw new InputError(
      '--compare-generator needs --generators 2 or more: the last generator runs the other build, the others this one',
    );
  progress.log('providing Kafka, Redis and Postgres');
  const running = await startTestInfrastructure(process.env);
  try {
    for (const line of running.descriptions) progress.log(line);
    const report = await runPipelineBench({
      nodes: options.nodes,
      seed: options.seed,
      rate: options.rate,
      seconds: options.seconds,
      warmUpSeconds: options.warmUpSeconds,
      generators: options.generators,
      ...(compareGeneratorBundle === undefined ? {} : { compareGeneratorBundle }),
      infrastructure: running.infrastructure,
      progress,
      signal: controller.signal,
      ...(profileDir === undefined ? {} : { profileDir }),
      ...(options.nodeOptions === undefined ? {} : { nodeOptions: options.nodeOptions }),
    });
    try {
      await writeFile(options.out, `${JSON.stringify(report, null, 2)}\n`);
    } catch (error) {
      throw new InputError(`cannot write ${options.out}: ${describeFsError(error)}`);
    }
    writeLine(streams.stdout, formatPipelineTable(report));
    writeLine(streams.stderr, `bench: report written to ${options.out}`);
    if (profileDir !== undefined)
      for (const line of await profilesIn(profileDir)) writeLine(streams.stderr, line);
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
    await running.stop();
  }
}

/** Where each service's CPU profile went (the services write them as they exit), and which wrote none. */
async function profilesIn(dir: string): Promise<string[]> {
  const lines = [`bench: CPU profiles in ${dir} (summary: node tools/bench/profile-summary.mjs ${dir})`];
  let services: string[];
  try {
    services = (await readdir(dir)).sort();
  } catch (error) {
    return [...lines, `bench: no profile directory: ${describeFsError(error)}`];
  }
  for (const service of services) {
    const files = (await readdir(join(dir, service)).catch(() => [] as string[])).filter((file) =>
      file.endsWith('.cpuprofile'),
    );
    lines.push(
      files.length > 0
        ? `bench:   ${service}: ${files.map((file) => join(dir, service, file)).join(', ')}`
        : `bench:   ${service}: no profile written (the process did not exit cleanly)`,
    );
  }
  return lines;
}

/** A progress bar per phase on an interactive terminal, plain lines otherwise. */
function progressOn(streams: Streams): PipelineProgress {
  let bar: SingleBar | undefined;
  let title = '';
  let total = 0;
  let lastLogged = 0;
  const interactive = isInteractive(streams);
  return {
    phase(phaseTitle, phaseTotal) {
      bar?.stop();
      title = phaseTitle;
      total = phaseTotal;
      lastLogged = Date.now();
      if (!interactive) {
        writeLine(streams.stderr, `bench: ${title} (0/${total})`);
        return;
      }
      bar = new SingleBar(
        {
          stream: streams.stderr,
          format: `${title} {bar} {value}/{total} | {percentage}% | {duration_formatted}`,
          barsize: 30,
          hideCursor: !noColor(streams),
          etaBuffer: 50,
        },
        Presets.shades_classic,
      );
      bar.start(phaseTotal, 0);
    },
    update(done) {
      if (bar) bar.update(done);
      else if (Date.now() - lastLogged >= 5_000) {
        lastLogged = Date.now();
        writeLine(streams.stderr, `bench: ${title} (${done}/${total})`);
      }
    },
    log(message) {
      if (bar) {
        bar.stop();
        bar = undefined;
      }
      writeLine(streams.stderr, `bench: ${message}`);
    },
    end() {
      bar?.stop();
      bar = undefined;
    },
  };
}

/** The generator bundle of another build's tree, which must have been built. */
async function otherGenerator(tree: string): Promise<string> {
  const bundle = join(resolve(tree), 'dist', 'generator-service', 'main.js');
  try {
    await access(bundle);
  } catch {
    throw new InputError(
      `--compare-generator: ${bundle} is missing (run \`npm run build\` in ${tree} first)`,
    );
  }
  return bundle;
}
