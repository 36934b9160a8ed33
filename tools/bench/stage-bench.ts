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
import type { NodeOutcome } from '../../apps/generator-service/src/generation/node-outcome';
import type { ReceivedBundleEvent } from '../../apps/distribution-service/src/distribution/distributor';
import { Distributor } from '../../apps/distribution-service/src/distribution/distributor';

export interface StageBenchOptions {
  readonly nodes: number;
  /** Nodes computed and published together, as the generator's slices (default 64, a change's). */
  readonly slice?: number;
  readonly seed?: number;
}

/** CPU ms per node of each stage, over the measured half of the fleet. */
export interface StageTimes {
  readonly engine: number;
  readonly publish: number;
  readonly parse: number;
  readonly distribute: number;
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
  const validation = validateFleet(buildBenchFleet({ nodes: options.nodes, seed: options.seed ?? 1 }).fleet);
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
  try {
    await distributor.start();
    const nodeIds = engine.compiled.nodeIds;
    const half = Math.floor(nodeIds.length / 2);
    const expected = new Map<string, string>();
    let times = { engine: 0, publish: 0, parse: 0, distribute: 0 };
    let eventBytes = 0;
    let files = 0;
    let events = 0;
    for (const [part, measured] of [
      [nodeIds.slice(0, half), false],
      [nodeIds.slice(half), true],
    ] as const) {
      times = { engine: 0, publish: 0, parse: 0, distribute: 0 };
      latestBytes = eventBytes = files = events = 0;
      for (let start = 0; start < part.length; start += slice) {
        let began = cpuMs();
        const outcomes: NodeOutcome[] = part.slice(start, start + slice).map((nodeId) => {
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
        await publisher.publish(
          outcomes,
          { revision: 1, committedAt: new Date().toISOString() },
          (nodeId, at) => engine.bundle(nodeId, { generatedAt: at }),
        );
        times.publish += cpuMs() - began;
        began = cpuMs();
        const received: ReceivedBundleEvent[] = [];
        for (const message of sent) {
          if (message.topic !== TOPIC_NAMES.nodeBundles) continue;
          const json = Buffer.from(message.value);
          const parsed = parseEvent(TOPICS.nodeBundles, json.toString('utf8'), {
            knownDigest: (sha256) => distributor.holdsBlob(sha256),
          });
          if (!parsed.ok)
            throw new Error(`an event the distribution refuses: ${JSON.stringify(parsed.issues)}`);
          received.push({ event: parsed.event, receivedAt: Date.now(), json });
          eventBytes += json.length;
          if (parsed.event.type === 'node.bundle') files += parsed.event.files.length;
          events++;
        }
        times.parse += cpuMs() - began;
        began = cpuMs();
        await distributor.bundles(received);
        times.distribute += cpuMs() - began;
      }
      if (!measured) continue;
      const perNode = (ms: number): number => ms / part.length;
      const msPerNode = {
        engine: perNode(times.engine),
        publish: perNode(times.publish),
        parse: perNode(times.parse),
        distribute: perNode(times.distribute),
      };
      const feedMatchesEngine = [...expected].every(
        ([nodeId, hash]) => log.latest(nodeId)?.bundle?.hash === hash,
      );
      return {
        nodes: nodeIds.length,
        measuredNodes: part.length,
        slice,
        msPerNode,
        servicesTimesEngine: (msPerNode.publish + msPerNode.parse + msPerNode.distribute) / msPerNode.engine,
        bytesPerNode: { event: eventBytes / Math.max(1, events), latest: latestBytes / Math.max(1, events) },
        filesPerEvent: files / Math.max(1, events),
        feedMatchesEngine,
      };
    }
    throw new Error('the fleet has no node to measure');
  } finally {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export function formatStageReport(report: StageBenchReport): string {
  const { msPerNode: ms } = report;
  const row = (name: string, value: number): string =>
    `${name.padEnd(11)} ${value.toFixed(3).padStart(7)} ms/node  ${(value / ms.engine).toFixed(2).padStart(5)}x the engine`;
  return [
    `stages: ${report.measuredNodes} of ${report.nodes} nodes measured (the first half warms up), slices of ${report.slice}`,
    row('engine', ms.engine),
    row('publish', ms.publish),
    row('parse', ms.parse),
    row('distribute', ms.distribute),
    `after the engine: ${report.servicesTimesEngine.toFixed(2)}x the engine`,
    `bytes per node: event ${report.bytesPerNode.event.toFixed(0)}, latest record ${report.bytesPerNode.latest.toFixed(0)}; ${report.filesPerEvent.toFixed(1)} files per event`,
    `root feed equal to the engine's hashes: ${report.feedMatchesEngine ? 'yes' : 'NO'}`,
  ].join('\n');
}
