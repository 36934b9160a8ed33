import { hash, randomUUID } from 'node:crypto';
import type { BundleCache, NodeBundleRecord } from '@policygen/cache';
import { MANIFEST_HEAD_PATH, MANIFEST_PROPERTIES_PATH } from '@policygen/sdk';
import type { BundleEntry, NodeBundle, NodeError, StoredDigests } from '@policygen/engine';
import { GENERATED_AT_FILE, MANIFEST_FILE } from '@policygen/engine';
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

  /** Digests remembered as stored in the cache (each instance those of the bundles it published). */
  get knownBlobs(): number {
    return this.storedBlobs.size;
  }

  /** After a flush, nothing may be assumed stored. */
  forgetStoredBlobs(): void {
    this.storedBlobs.clear();
  }

  async publish(
    outcomes: readonly NodeOutcome[],
    stamp: RevisionStamp,
    materialise: (nodeId: string, generatedAt: number) => NodeBundle,
  ): Promise<PublishSummary> {
    // The contents of the bundles the engine saw change go to the cache in the same round trip as
    // the read of the hashes it holds: a wake-up saved a slice. Those whose hash it turns out to
    // hold already (a restart, a rebalance) had their contents put for nothing, which a put allows.
    const computed = outcomes.flatMap((outcome) =>
      outcome.bundle && outcome.result.status === 'ok' ? [outcome.bundle] : [],
    );
    const [held, computedBlobsStored] = await Promise.all([
      this.cache.nodeHashes(outcomes.map((outcome) => outcome.nodeId)),
      this.storeBlobs(computed),
    ]);
    const bundles: PublishedBundle[] = [];
    const materialised: PublishedBundle[] = [];
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
        if (outcome.bundle) bundles.push(outcome.bundle);
        else {
          const bundle = this.published(
            materialise(outcome.nodeId, outcome.generatedAt),
            outcome.generatedAt,
            true,
          );
          materialised.push(bundle);
          bundles.push(bundle);
        }
        event('generated', result.hash);
      } else {
        summary.unchanged++;
        event('unchanged', result.hash);
      }
    }

    summary.blobsStored = computedBlobsStored + (await this.storeBlobs(materialised));
    const generatedAt = new Map(
      bundles.map((bundle) => [bundle.nodeId, new Date(bundle.generatedAt).toISOString()]),
    );
    const filesJson = new Map(bundles.map((bundle) => [bundle.nodeId, bundle.filesJson]));
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
                value: bundleEventJson(
                  record,
                  filesJson.get(record.nodeId) as string,
                  generatedAt.get(record.nodeId) as string,
                  catchUp,
                ),
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
   * The bundle as it travels, made as soon as the node is computed (`PublishedBundle`): the manifest
   * and the generation time are derived where the node is served (distribution `derived-files.ts`),
   * so they are named by digest only and the manifest's parts travel as files instead; a bundle
   * without parts travels whole, as before them. Contents the cache holds are left out (all are
   * kept with `keepAll`: a consumer found some missing).
   */
  published(bundle: NodeBundle<BundleEntry>, generatedAt: number, keepAll: boolean): PublishedBundle {
    const manifest = bundle.files.find((file) => file.path === MANIFEST_FILE);
    if (!manifest || !bundle.hash)
      throw new Error(`node ${bundle.nodeId} has no bundle to publish (status ${bundle.status})`);
    this.storedBlobs.tick();
    const listing = new FileListing(keepAll, this.storedBlobs);
    const parts = bundle.manifestParts;
    if (parts) {
      listing.add(MANIFEST_HEAD_PATH, digestOf(parts.head), parts.head);
      listing.add(MANIFEST_PROPERTIES_PATH, digestOf(parts.properties), parts.properties);
    }
    for (const file of bundle.files) {
      // With the parts, the manifest and the generation time are derived where the node is served.
      const derived = parts !== undefined && (file.path === MANIFEST_FILE || file.path === GENERATED_AT_FILE);
      listing.add(file.path, file.sha256, derived ? undefined : file.content);
    }
    return {
      nodeId: bundle.nodeId,
      hash: bundle.hash,
      manifestSha256: manifest.sha256,
      generatedAt,
      filesJson: listing.json(),
      digests: listing.digests,
      blobs: listing.blobs,
      reused: listing.reused,
    };
  }

  /** Puts the bundles' contents (each digest once), and remembers them as stored once the cache has them. */
  private async storeBlobs(bundles: readonly PublishedBundle[]): Promise<number> {
    const fresh = new Map<string, Buffer>();
    let known = 0;
    for (const bundle of bundles) {
      known += bundle.reused;
      for (const blob of bundle.blobs) fresh.set(blob.sha256, blob.content);
    }
    this.observer.cacheLookups('blob', known, fresh.size);
    const stored = await this.cache.putBlobs([...fresh].map(([sha256, content]) => ({ sha256, content })));
    // A node's manifest is its own (its id, its time): never met again, not worth remembering.
    for (const bundle of bundles) fresh.delete(bundle.manifestSha256);
    for (const sha256 of fresh.keys()) this.storedBlobs.note(sha256);
    return stored;
  }
}

/**
 * A bundle's file list as the event's JSON text (the same bytes as `JSON.stringify` of its
 * `{ path, sha256 }` objects, `filesJsonOf`), and the contents to send as bytes: those given, unless
 * the cache holds them already (`stored`) and not all are asked for.
 */
class FileListing {
  readonly blobs: { sha256: string; content: Buffer }[] = [];
  /** The listed files' digests (the manifest left out, as in `json`). */
  readonly digests: string[] = [];
  reused = 0;
  private readonly files: { path: string; sha256: string }[] = [];

  constructor(
    private readonly keepAll: boolean,
    private readonly stored: RecentDigests,
  ) {}

  add(path: string, sha256: string, content: string | undefined): void {
    this.files.push({ path, sha256 });
    if (path !== MANIFEST_FILE) this.digests.push(sha256);
    if (content !== undefined && (this.keepAll || !this.stored.has(sha256)))
      this.blobs.push({ sha256, content: Buffer.from(content) });
    else this.reused++;
  }

  /** The manifest is named by the event's `manifestSha256`, not listed. */
  json(): string {
    return filesJsonOf(this.files, MANIFEST_FILE);
  }
}

/** A manifest part's SHA-256 (hex) in one call, no Hash object: a third less time for a 3 KB part. */
function digestOf(text: string): string {
  return hash('sha256', text, 'hex');
}

function recordOf(bundle: PublishedBundle, stamp: RevisionStamp): NodeBundleRecord {
  return {
    nodeId: bundle.nodeId,
    hash: bundle.hash,
    revision: stamp.revision,
    committedAt: stamp.committedAt,
    digests: bundle.digests,
    manifestSha256: bundle.manifestSha256,
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
