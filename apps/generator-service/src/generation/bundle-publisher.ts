import { randomUUID } from 'node:crypto';
import type { BundleCache, NodeBundleRecord } from '@policygen/cache';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH } from '@policygen/sdk';
import type { BundleEntry, NodeBundle, NodeError, StoredDigests } from '@policygen/engine';
import { GENERATED_AT_FILE, MANIFEST_FILE, sha256 } from '@policygen/engine';
import type { GenerationEvent, NodeBundleEvent, TopicNames } from '@policygen/events';
import { generationSummaries } from '@policygen/events';
import type { MessageProducer } from '@policygen/messaging';
import { MessageTooLargeError } from '@policygen/messaging';
import type { NodeOutcome, PublishedBundle } from './node-outcome';
import { RecentDigests } from './recent-digests';
import { bundleEventJson, filesJsonOf } from './bundle-event-json';

/** How long the cache keeps a blob no bundle names (the generator's default). */
export const DEFAULT_CACHE_BLOB_GRACE_MS = 3_600_000;

/** The key of the generators' summaries on the pipeline-summaries topic. */
export const GENERATION_SUMMARY_KEY = 'generation';

/** The error of a node whose bundle event the bus refused as too large: it keeps its last bundle. */
export const BUNDLE_TOO_LARGE = 'BUNDLE_TOO_LARGE';

/** The revision a batch of outcomes was generated at, and when that revision was committed. */
export interface RevisionStamp {
  readonly revision: number;
  readonly committedAt: string;
  /** The cycle regenerates after a snapshot load, a rebalance or a flushed cache, not for a change of its own. */
  readonly catchUp?: boolean;
}

export interface PublishSummary {
  readonly generated: number;
  readonly unchanged: number;
  readonly failed: number;
  readonly removed: number;
  readonly blobsStored: number;
}

/** What the publisher tells about itself (metrics). */
export interface PublisherObserver {
  bundlesPublished(count: number): void;
  bundlesTooLarge(nodeIds: readonly string[], error: MessageTooLargeError): void;
  /** Each node's result, as published: generated, unchanged or failed (with its errors). */
  resultsPublished(events: readonly GenerationEvent[]): void;
  /**
   * Reuse: `node` — a node whose inputs were unchanged, skipped without rendering; `blob` — a
   * file known to be in the cache already, not sent to it again.
   */
  cacheLookups(cache: 'node' | 'blob', hits: number, misses: number): void;
}

const SILENT: PublisherObserver = {
  bundlesPublished: () => undefined,
  bundlesTooLarge: () => undefined,
  resultsPublished: () => undefined,
  cacheLookups: () => undefined,
};

/**
 * Turns computed nodes into the generator's outputs: file contents into the cache (once each),
 * `node.bundle` / `node.deleted` events, the cache's node records, a `generation.result` per
 * node, and the slice's `generation.summary` (the same results, one message). A bundle is
 * published only when its hash differs from the one the cache holds, so a restart or a rebalance
 * republishes nothing that consumers already have. The event goes out before the cache records
 * the hash: a crash in between republishes, it never loses. Events carry digests only (the
 * manifest by its digest and its two parts): an event's size does not grow with a node's policies.
 * A bundle whose event the bus refuses as too large fails that node alone.
 */
export class BundlePublisher {
  /**
   * Digests known to be in the cache: their contents need not travel again. Remembered for less
   * than the cache's grace period, so a blob skipped here cannot have been collected meanwhile.
   */
  private readonly storedBlobs: RecentDigests;

  constructor(
    private readonly cache: BundleCache,
    private readonly producer: MessageProducer,
    private readonly topics: TopicNames,
    private readonly observer: PublisherObserver = SILENT,
    cacheBlobGraceMs = DEFAULT_CACHE_BLOB_GRACE_MS,
  ) {
    this.storedBlobs = new RecentDigests(Math.max(1, Math.floor(cacheBlobGraceMs / 2)), 500_000);
  }

  /** Digests the cache holds for sure: the engine need not render their files again. */
  readonly stored: StoredDigests = (sha256) => this.storedBlobs.has(sha256);

  /** After a flush, nothing may be assumed stored. */
  forgetStoredBlobs(): void {
    this.storedBlobs.clear();
  }

  async publish(
    outcomes: readonly NodeOutcome[],
    stamp: RevisionStamp,
    materialise: (nodeId: string, generatedAt: number) => NodeBundle,
  ): Promise<PublishSummary> {
    const held = await this.cache.nodeHashes(outcomes.map((outcome) => outcome.nodeId));
    const bundles: PublishedBundle[] = [];
    const removals: string[] = [];
    const events = new Map<string, GenerationEvent>();
    const summary = { generated: 0, unchanged: 0, failed: 0, removed: 0, blobsStored: 0 };

    const reused = outcomes.filter((outcome) => outcome.skipped).length;
    this.observer.cacheLookups('node', reused, outcomes.length - reused);
    for (const outcome of outcomes) {
      const { result } = outcome;
      const heldHash = held.get(outcome.nodeId)?.hash ?? null;
      const event = (
        outcomeName: GenerationEvent['outcome'],
        hash: string | null,
        errors: readonly NodeError[] = [],
      ) =>
        events.set(outcome.nodeId, {
          schemaVersion: 1,
          type: 'generation.result',
          nodeId: outcome.nodeId,
          revision: stamp.revision,
          outcome: outcomeName,
          hash,
          errors: errors.map((error) => ({ ...error }) as GenerationEvent['errors'][number]),
          durationMs: outcome.durationMs,
        });
      if (result.status === 'failed') {
        summary.failed++;
        event('failed', heldHash, result.errors);
      } else if (result.status === 'ignored') {
        if (heldHash === null) {
          summary.unchanged++;
          event('unchanged', null);
        } else {
          removals.push(outcome.nodeId);
          event('generated', null);
        }
      } else if (outcome.forced || result.hash !== heldHash) {
        summary.generated++;
        bundles.push(
          outcome.bundle ??
            this.published(materialise(outcome.nodeId, outcome.generatedAt), outcome.generatedAt, true),
        );
        event('generated', result.hash);
      } else {
        summary.unchanged++;
        event('unchanged', result.hash);
      }
    }

    const forced = new Set(outcomes.filter((outcome) => outcome.forced).map((outcome) => outcome.nodeId));
    summary.blobsStored = await this.storeBlobs(bundles, forced);
    const generatedAt = new Map(
      bundles.map((bundle) => [bundle.nodeId, new Date(bundle.generatedAt).toISOString()]),
    );
    const catchUp = stamp.catchUp === true;
    let records = bundles.map((bundle) => recordOf(bundle, stamp));
    // The slice's bundles, removals, results and summary go out in one request to the bus.
    for (;;) {
      const results = [...events.values()];
      try {
        await this.producer.sendAll([
          {
            topic: this.topics.nodeBundles,
            messages: [
              ...records.map((record) => ({
                key: record.nodeId,
                value: bundleEventJson(record, generatedAt.get(record.nodeId) as string, catchUp),
              })),
              ...removals.map((nodeId) => message(nodeId, deletionEvent(nodeId, stamp))),
            ],
          },
          {
            topic: this.topics.generationEvents,
            messages: results.map((event) => message(event.nodeId, event)),
          },
          // The same results, a batch a message, for those who follow the whole pipeline (the config API).
          {
            topic: this.topics.pipelineSummaries,
            messages:
              results.length === 0
                ? []
                : generationSummaries(stamp, results, { batchId: randomUUID() }).map((summary) =>
                    message(GENERATION_SUMMARY_KEY, summary),
                  ),
          },
        ]);
        this.observer.bundlesPublished(records.length);
        await this.cache.recordBundles(records);
        summary.removed = await this.forgetRemoved(removals, stamp);
        this.observer.resultsPublished(results);
        return summary;
      } catch (error) {
        // Nothing was sent: the bundles too large for the bus fail their nodes alone (they keep their last one).
        if (!(error instanceof MessageTooLargeError) || error.topic !== this.topics.nodeBundles) throw error;
        const tooLarge = new Set(error.keys);
        const refused = records
          .filter((record) => tooLarge.has(record.nodeId))
          .map((record) => record.nodeId);
        // A refusal that names none of ours would refuse the same send again.
        if (refused.length === 0) throw error;
        this.observer.bundlesTooLarge(refused, error);
        for (const nodeId of refused) {
          summary.generated--;
          summary.failed++;
          const event = events.get(nodeId);
          if (event)
            events.set(nodeId, {
              ...event,
              outcome: 'failed',
              hash: held.get(nodeId)?.hash ?? null,
              errors: [{ code: BUNDLE_TOO_LARGE, message: error.message }],
            });
        }
        records = records.filter((record) => !tooLarge.has(record.nodeId));
      }
    }
  }

  /** Publishes the removal of nodes that left the fleet (or this cache's view of it). */
  async remove(nodeIds: readonly string[], stamp: RevisionStamp): Promise<number> {
    if (nodeIds.length === 0) return 0;
    await this.producer.send(
      this.topics.nodeBundles,
      nodeIds.map((nodeId) => message(nodeId, deletionEvent(nodeId, stamp))),
    );
    return this.forgetRemoved(nodeIds, stamp);
  }

  /** The cache's records of removed nodes, once their removal is published. */
  private async forgetRemoved(nodeIds: readonly string[], stamp: RevisionStamp): Promise<number> {
    if (nodeIds.length === 0) return 0;
    await this.cache.removeNodes(nodeIds.map((nodeId) => ({ nodeId, revision: stamp.revision })));
    return nodeIds.length;
  }

  /**
   * The bundle as it travels: the manifest and the generation time are derived where the node is
   * served (distribution `derived-files.ts`), so they are named by digest only and the manifest's
   * parts travel as files instead. A bundle without parts travels whole, as before them. Contents
   * the cache holds are dropped here already (all are kept with `keepAll`: a consumer found some
   * missing), so that a computed slice holds little while it waits to be published.
   */
  published(bundle: NodeBundle<BundleEntry>, generatedAt: number, keepAll: boolean): PublishedBundle {
    const manifest = bundle.files.find((file) => file.path === MANIFEST_FILE);
    if (!manifest || !bundle.hash)
      throw new Error(`node ${bundle.nodeId} has no bundle to publish (status ${bundle.status})`);
    const parts = bundle.manifestParts;
    if (!parts)
      return { nodeId: bundle.nodeId, hash: bundle.hash, manifest, generatedAt, files: bundle.files };
    const files: BundleEntry[] = [
      this.part(MANIFEST_HEAD_PATH, parts.head, keepAll),
      this.part(MANIFEST_PROPERTIES_PATH, parts.properties, keepAll),
    ];
    for (const file of bundle.files)
      files.push(
        file.path === MANIFEST_FILE || file.path === GENERATED_AT_FILE ? withoutContent(file) : file,
      );
    return {
      nodeId: bundle.nodeId,
      hash: bundle.hash,
      manifest: withoutContent(manifest),
      generatedAt,
      files,
    };
  }

  /**
   * A manifest part as it travels, its content left out when the cache holds it already. Hashed
   * rather than looked up by its text in a map of known parts: a fresh string of several KB is
   * hashed by the map too, and SHA-256 (with the CPU's instructions for it) is the cheaper of the two.
   */
  private part(path: string, content: string, keepAll: boolean): BundleEntry {
    const digest = sha256(content);
    const bytes = Buffer.byteLength(content);
    return !keepAll && this.storedBlobs.has(digest)
      ? { path, sha256: digest, bytes }
      : { path, sha256: digest, bytes, content };
  }

  /** Puts what the cache may not hold; all of an asked-for bundle (a consumer found some missing). */
  private async storeBlobs(
    bundles: readonly PublishedBundle[],
    forced: ReadonlySet<string>,
  ): Promise<number> {
    const fresh = new Map<string, string>();
    let known = 0;
    this.storedBlobs.tick();
    for (const bundle of bundles) {
      const all = forced.has(bundle.nodeId);
      for (const file of bundle.files)
        // A file without content is one the engine was told the cache holds (`stored`), or a derived one.
        if (file.content !== undefined && (all || !this.storedBlobs.has(file.sha256)))
          fresh.set(file.sha256, file.content);
        else known++;
    }
    this.observer.cacheLookups('blob', known, fresh.size);
    const stored = await this.cache.putBlobs([...fresh].map(([sha256, content]) => ({ sha256, content })));
    // A node's manifest is its own (its id, its time): never met again, not worth remembering.
    for (const bundle of bundles) fresh.delete(bundle.manifest.sha256);
    for (const sha256 of fresh.keys()) this.storedBlobs.note(sha256);
    return stored;
  }
}

function withoutContent(file: BundleEntry): BundleEntry {
  return { path: file.path, sha256: file.sha256, bytes: file.bytes };
}

function recordOf(bundle: PublishedBundle, stamp: RevisionStamp): NodeBundleRecord & { filesJson: string } {
  return {
    nodeId: bundle.nodeId,
    hash: bundle.hash,
    revision: stamp.revision,
    committedAt: stamp.committedAt,
    // The caches and the event read `filesJson`: the list of objects is made only if asked for.
    get files() {
      return bundle.files
        .filter((file) => file.path !== MANIFEST_FILE)
        .map((file) => ({ path: file.path, sha256: file.sha256 }));
    },
    filesJson: filesJsonOf(bundle.files, MANIFEST_FILE),
    manifestSha256: bundle.manifest.sha256,
  };
}

function deletionEvent(nodeId: string, stamp: RevisionStamp): NodeBundleEvent {
  return {
    schemaVersion: 1,
    type: 'node.deleted',
    nodeId,
    revision: stamp.revision,
    committedAt: stamp.committedAt,
  };
}

function message(key: string, value: unknown): { key: string; value: string } {
  return { key, value: JSON.stringify(value) };
}
