// The generator's and the root's per-node path in one process, without Kafka or Redis: the engine
// computes each node, the generator's publisher turns it into its cache writes and `node.bundle`
// event, the event is parsed as the distribution parses it, and the distributor writes it to a
// feed and blob directory on disk. Each stage's CPU per node and the bytes a node sends on each
// hop are measured in one run, so that a change to one stage is judged by a ratio to the engine of
// the same run, in seconds rather than in a pipeline benchmark's minutes, and without the noise of
// the other processes sharing the two cores. Usage: `npm run bench:stages -- [--nodes N] [--slice N]`.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { MemoryBundleCache } from '@policygen/cache';
import { BlobDirectory, FeedLog, confirmationsOf } from '@policygen/distribution';
import { GenerationEngine, validateFleet } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import type { OutgoingMessage, TopicMessages } from '@policygen/messaging';
import { parseEvent, TOPICS } from '@policygen/sdk';
import { placementOf } from '@policygen/store';
import { BundlePublisher } from '../../apps/generator-service/src/generation/bundle-publisher';
import type { RevisionStamp } from '../../apps/generator-service/src/generation/bundle-publisher';
import type { NodeOutcome } from '../../apps/generator-service/src/generation/node-outcome';
import { planSteadyChanges } from '../../apps/cli/src/bench/pipeline/change-plan';
import type { ReceivedBundleEvent } from '../../apps/distribution-service/src/distribution/distributor';
import { Distributor } from '../../apps/distribution-service/src/distribution/distributor';

export interface StageBenchOptions {
  readonly nodes: number;
  /** Nodes computed and published together, as the generator's slices (default 64, a change's). */
  readonly slice?: number;
  readonly seed?: number;
  /** Change sets of the steady load's mix applied after the import (default 300). */
  readonly changes?: number;
}

/** CPU ms of each stage (per node in a report). */
export interface StageTimes {
  engine: number;
  publish: number;
  parse: number;
  distribute: number;
}

function zeroTimes(): StageTimes {
  return { engine: 0, publish: 0, parse: 0, distribute: 0 };
}

export interface StageBenchReport {
  readonly nodes: number;
  readonly measuredNodes: number;
  readonly slice: number;
  readonly msPerNode: StageTimes;
  /** The stages after the engine, as a multiple of the engine's own time per node. */
  readonly servicesTimesEngine: number;
  /** Bytes per node on each hop: the `node.bundle` event, the cache's record, the feed's latest record. */
  readonly bytesPerNode: { readonly event: number; readonly latest: number };
  readonly filesPerEvent: number;
  /** The steady load's mix after the import: each change set's nodes computed and carried alone. */
  readonly steady: {
    readonly changeSets: number;
    readonly nodeChanges: number;
    readonly msPerNodeChange: StageTimes;
    readonly servicesTimesEngine: number;
  };
  /** Every node's entry on the root feed carries the hash the engine gave it. */
  readonly feedMatchesEngine: boolean;
}

const TOPIC_NAMES = {
  nodeBundles: 'node-bundles',
  generationEvents: 'generation-events',
  pipelineSummaries: 'pipeline-summaries',
};

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/**
 * Runs the stages over the whole fleet in slices: the first half warms the code and the caches up,
 * the second half is measured.
 */
export async function runStageBench(options: StageBenchOptions): Promise<StageBenchReport> {
  const slice = options.slice ?? 64;
  const bench = buildBenchFleet({ nodes: options.nodes, seed: options.seed ?? 1 });
  const validation = validateFleet(bench.fleet);
  if (!validation.ok) throw new Error('the bench fleet is invalid');
  const engine = GenerationEngine.fromFleet(validation.fleet, { revision: 1 });
  const cache = new MemoryBundleCache();
  const sent: { topic: string; value: string }[] = [];
  const capture = (topic: string, messages: readonly OutgoingMessage[]): void => {
    for (const message of messages)
      if (typeof message.value === 'string') sent.push({ topic, value: message.value });
  };
  const producer = {
    send: async (topic: string, messages: readonly OutgoingMessage[]) => capture(topic, messages),
    sendAll: async (sends: readonly TopicMessages[]) => {
      for (const { topic, messages } of sends) capture(topic, messages);
    },
    close: async () => undefined,
  };
  const publisher = new BundlePublisher(cache, producer, TOPIC_NAMES as never);
  const dir = await mkdtemp(join(tmpdir(), 'stage-bench-'));
  const log = await FeedLog.open(join(dir, 'feed.jsonl'));
  const blobs = await BlobDirectory.open(join(dir, 'blobs'));
  let latestBytes = 0;
  const distributor = new Distributor({
    log,
    blobs,
    cache,
    snapshots: { latestPlacement: async () => ({ revision: 1, placement: placementOf(validation.fleet) }) },
    logger: pino({ level: 'silent' }),
    tokenSecret: 'stage-bench-token-secret',
    // What the distribution-service does once entries are written: the latest bundles and the root's confirmations.
    onWritten: async ({ entries, distributed }) => {
      for (const record of distributed)
        latestBytes += record.json?.length ?? Buffer.byteLength(JSON.stringify(record.bundle));
      JSON.stringify(confirmationsOf(entries, 'root', new Date().toISOString()));
    },
  });
  const expected = new Map<string, string>();
  let counts = { events: 0, eventBytes: 0, files: 0 };
  /** One slice through every stage, as the generator publishes it and the root writes it. */
  const runSlice = async (
    nodeIds: readonly string[],
    stamp: RevisionStamp,
    times: StageTimes,
  ): Promise<void> => {
    let began = cpuMs();
    const outcomes: NodeOutcome[] = nodeIds.map((nodeId) => {
      const generatedAt = Date.now();
      const regeneration = engine.regenerateNode(nodeId, {
        materialise: true,
        generatedAt,
        stored: publisher.stored,
      });
      const bundle =
        !regeneration.skipped && regeneration.bundle?.hash
          ? publisher.published(regeneration.bundle, generatedAt, false)
          : undefined;
      if (bundle) expected.set(nodeId, bundle.hash);
      return {
        nodeId,
        skipped: regeneration.skipped,
        result: regeneration.result,
        ...(bundle ? { bundle } : {}),
        durationMs: 0,
        generatedAt,
        forced: false,
      };
    });
    times.engine += cpuMs() - began;
    began = cpuMs();
    sent.length = 0;
    await publisher.publish(outcomes, stamp, (nodeId, at) => engine.bundle(nodeId, { generatedAt: at }));
    times.publish += cpuMs() - began;
    began = cpuMs();
    const received: ReceivedBundleEvent[] = [];
    for (const message of sent) {
      if (message.topic !== TOPIC_NAMES.nodeBundles) continue;
      const json = Buffer.from(message.value);
      // As the distribution-service reads them: a digest it holds for the node at the path is not checked again.
      const parsed = parseEvent(TOPICS.nodeBundles, json.toString('utf8'), {
        heldFiles: (nodeId) => distributor.heldFiles(nodeId),
      });
      if (!parsed.ok) throw new Error(`an event the distribution refuses: ${JSON.stringify(parsed.issues)}`);
      received.push({ event: parsed.event, receivedAt: Date.now(), json });
      counts.eventBytes += json.length;
      if (parsed.event.type === 'node.bundle') counts.files += parsed.event.files.length;
      counts.events++;
    }
    times.parse += cpuMs() - began;
    began = cpuMs();
    await distributor.bundles(received);
    times.distribute += cpuMs() - began;
  };
  const perNode = (times: StageTimes, nodes: number): StageTimes => ({
    engine: times.engine / Math.max(1, nodes),
    publish: times.publish / Math.max(1, nodes),
    parse: times.parse / Math.max(1, nodes),
    distribute: times.distribute / Math.max(1, nodes),
  });
  const afterEngine = (ms: StageTimes): number => (ms.publish + ms.parse + ms.distribute) / ms.engine;
  try {
    await distributor.start();
    const nodeIds = engine.compiled.nodeIds;
    const half = Math.floor(nodeIds.length / 2);
    if (half === 0) throw new Error('the fleet has no node to measure');
    const stamp = (revision: number): RevisionStamp => ({ revision, committedAt: new Date().toISOString() });
    let times = zeroTimes();
    for (const part of [nodeIds.slice(0, half), nodeIds.slice(half)]) {
      times = zeroTimes();
      latestBytes = 0;
      counts = { events: 0, eventBytes: 0, files: 0 };
      for (let start = 0; start < part.length; start += slice)
        await runSlice(part.slice(start, start + slice), stamp(1), times);
    }
    const msPerNode = perNode(times, nodeIds.length - half);
    const bytesPerNode = {
      event: counts.eventBytes / Math.max(1, counts.events),
      latest: latestBytes / Math.max(1, counts.events),
    };
    const filesPerEvent = counts.files / Math.max(1, counts.events);

    // The steady load's mix (the pipeline benchmark's plan): each change set applied, then its nodes.
    const plan = planSteadyChanges(engine.compiled, bench.landmarks, {
      count: options.changes ?? 300,
      seed: options.seed ?? 1,
    });
    const steadyTimes = zeroTimes();
    let nodeChanges = 0;
    for (const change of plan.changes) {
      const outcome = engine.apply(change.changeSet);
      if (!outcome.ok)
        throw new Error(`a planned change set does not apply: ${JSON.stringify(outcome.issues)}`);
      const pending = engine.pendingNodes();
      nodeChanges += pending.length;
      for (let start = 0; start < pending.length; start += slice)
        await runSlice(pending.slice(start, start + slice), stamp(outcome.revision), steadyTimes);
    }
    const steadyPerChange = perNode(steadyTimes, nodeChanges);
    const feedMatchesEngine = [...expected].every(
      ([nodeId, hash]) => log.latest(nodeId)?.bundle?.hash === hash,
    );
    return {
      nodes: nodeIds.length,
      measuredNodes: nodeIds.length - half,
      slice,
      msPerNode,
      servicesTimesEngine: afterEngine(msPerNode),
      bytesPerNode,
      filesPerEvent,
      steady: {
        changeSets: plan.changes.length,
        nodeChanges,
        msPerNodeChange: steadyPerChange,
        servicesTimesEngine: afterEngine(steadyPerChange),
      },
      feedMatchesEngine,
    };
  } finally {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export function formatStageReport(report: StageBenchReport): string {
  const rows = (ms: StageTimes, unit: string): string[] =>
    (['engine', 'publish', 'parse', 'distribute'] as const).map(
      (stage) =>
        `  ${stage.padEnd(11)} ${ms[stage].toFixed(3).padStart(7)} ms/${unit}  ${(ms[stage] / ms.engine).toFixed(2).padStart(5)}x the engine`,
    );
  const { steady } = report;
  return [
    `import: ${report.measuredNodes} of ${report.nodes} nodes measured (the first half warms up), slices of ${report.slice}`,
    ...rows(report.msPerNode, 'node'),
    `  after the engine: ${report.servicesTimesEngine.toFixed(2)}x the engine`,
    `  bytes per node: event ${report.bytesPerNode.event.toFixed(0)}, latest record ${report.bytesPerNode.latest.toFixed(0)}; ${report.filesPerEvent.toFixed(1)} files per event`,
    `steady: ${steady.changeSets} change sets of the pipeline benchmark's mix, ${steady.nodeChanges} node changes`,
    ...rows(steady.msPerNodeChange, 'change'),
    `  after the engine: ${steady.servicesTimesEngine.toFixed(2)}x the engine`,
    `root feed equal to the engine's hashes: ${report.feedMatchesEngine ? 'yes' : 'NO'}`,
  ].join('\n');
}
