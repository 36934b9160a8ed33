import { Presets, SingleBar } from 'cli-progress';
import type { GenerationEngine, NodeBundle, NodeError } from '@policygen/engine';
import { writeNodeBundle } from './io/write-bundles';
import { indentContinuation, isInteractive, noColor, writeLine } from './io/streams';
import type { Streams } from './io/streams';

export interface NodeFailure {
  readonly nodeId: string;
  readonly errors: readonly NodeError[];
}

/** What a generation run did; `generate --json` prints it. */
export interface GenerationSummary {
  readonly nodes: number;
  readonly ok: number;
  readonly failed: number;
  readonly ignored: number;
  readonly failures: readonly NodeFailure[];
  /** Node id → bundle hash, for every node that succeeded. */
  readonly hashes: Readonly<Record<string, string>>;
  /** Policies of every node that succeeded. */
  readonly policies: number;
}

/**
 * Writes the given nodes' bundles at the engine's revision under `outDir` (see write-bundles.ts),
 * with a progress bar when stderr is a terminal. The engine does the work; this is the loop.
 */
export async function generateInto(
  engine: GenerationEngine,
  nodeIds: readonly string[],
  outDir: string,
  options: { readonly generatedAt: number },
  streams: Streams,
): Promise<GenerationSummary> {
  const progress = startProgress(streams, nodeIds.length);
  let ok = 0;
  let ignored = 0;
  let policies = 0;
  const failures: NodeFailure[] = [];
  const hashes: Record<string, string> = {};
  try {
    for (const nodeId of nodeIds) {
      const bundle = engine.compute(nodeId, { materialise: true, generatedAt: options.generatedAt })
        .bundle as NodeBundle;
      await writeNodeBundle(outDir, bundle);
      if (bundle.status === 'ok') {
        ok++;
        policies += bundle.manifest?.policies.length ?? 0;
        if (bundle.hash !== null) hashes[nodeId] = bundle.hash;
      } else if (bundle.status === 'failed') {
        failures.push({ nodeId, errors: bundle.errors });
      } else {
        ignored++;
      }
      progress?.increment();
    }
  } finally {
    progress?.stop();
  }
  return { nodes: nodeIds.length, ok, failed: failures.length, ignored, failures, hashes, policies };
}

function startProgress(streams: Streams, total: number): SingleBar | undefined {
  if (!isInteractive(streams) || total === 0) return undefined;
  const bar = new SingleBar(
    {
      stream: streams.stderr,
      format: 'generating {bar} {value}/{total} nodes | {percentage}% | {eta_formatted} left',
      barsize: 30,
      hideCursor: !noColor(streams),
      clearOnComplete: true,
      etaBuffer: 50,
    },
    Presets.shades_classic,
  );
  bar.start(total, 0);
  return bar;
}

const FAILURES_SHOWN = 20;

/** Each failed node and why, on stderr (the first few; `--json` has them all). */
export function reportFailures(summary: GenerationSummary, streams: Streams): void {
  for (const failure of summary.failures.slice(0, FAILURES_SHOWN)) {
    const errors = failure.errors.map((error) => `${error.code}: ${error.message}`);
    writeLine(streams.stderr, indentContinuation(`node ${failure.nodeId} failed: ${errors.join('; ')}`));
  }
  const more = summary.failures.length - FAILURES_SHOWN;
  if (more > 0) writeLine(streams.stderr, `... and ${more} more failed nodes (see --json)`);
}
