import type { FeedBundle, FeedEntry } from './feed';
import type { FeedLog } from './disk/feed-log';
import type { RelayTopology } from './topology';

/** An entry before it has its place in the feed. */
export type UnnumberedEntry = Omit<FeedEntry, 'seq'>;

export type ArrivedBundle = Omit<FeedBundle, 'distributedAt' | 'nodeKey' | 'tokenDigest'> & {
  readonly nodeId: string;
};

/**
 * Decides the root feed's entries: a node's bundle and where it is served change independently
 * (the generator's bundles, the configuration's relay tree), and an entry is written when either
 * does. Bundles older than what is held, and repeats of the same bundle, write nothing.
 */
export class DistributionLedger {
  private topology: RelayTopology | null = null;
  /** Set when the feed was found ahead of the configuration (`rebase`). */
  private rebased: { readonly revision: number; readonly throughSeq: number } | null = null;
  /**
   * Set once `rekeyed` found every held bundle with the key `nodeKeyOf` gives: from then on a node's
   * next bundle takes its held bundle's key as it is (an HMAC per bundle was 2.6% of the
   * distribution-service at steady). After a rotated secret, keys are made again until a restart.
   */
  private heldKeysCurrent = false;

  /** `nodeKeyOf`: the key of a node under the one secret of the ledger's life (node-token.ts). */
  constructor(
    private readonly log: FeedLog,
    private readonly nodeKeyOf: (nodeId: string) => string | null,
    private readonly now: () => Date = () => new Date(),
  ) {}

  get hasTopology(): boolean {
    return this.topology !== null;
  }

  /** Numbers entries after the feed's cursor, in order. */
  number(entries: readonly UnnumberedEntry[]): FeedEntry[] {
    const start = this.log.cursor;
    return entries.map((entry, index) => ({ seq: start + index + 1, ...entry }));
  }

  /**
   * The feed holds entries of revisions the configuration does not have (its data was lost, or
   * restored from an older backup), which is at `revision`: until a node gets a new entry, its
   * entry counts as of `revision`, and a bundle of `revision` or newer replaces it even when its
   * files are the same (its manifest names a revision that exists). Without this, every bundle of
   * the configuration would be stale against the lost revisions, for good.
   */
  rebase(revision: number): void {
    this.rebased = { revision, throughSeq: this.log.cursor };
  }

  /** Whether an entry was written from a revision the configuration does not have (see `rebase`). */
  private fromLostRevision(entry: FeedEntry): boolean {
    return (
      this.rebased !== null && entry.seq <= this.rebased.throughSeq && entry.revision > this.rebased.revision
    );
  }

  private heldRevision(entry: FeedEntry): number {
    return this.fromLostRevision(entry) ? (this.rebased?.revision ?? entry.revision) : entry.revision;
  }

  /** A new bundle of a node: an entry unless it is stale or already held. */
  bundleArrived(bundle: ArrivedBundle): UnnumberedEntry | null {
    const current = this.log.latest(bundle.nodeId);
    if (
      current &&
      (bundle.revision < this.heldRevision(current) ||
        (current.bundle?.hash === bundle.hash && !this.fromLostRevision(current)))
    )
      return null;
    const { nodeId, ...fields } = bundle;
    const heldKey = this.heldKeysCurrent ? current?.bundle?.nodeKey : undefined;
    return {
      nodeId,
      path: this.topology ? [...this.topology.servingPath(nodeId)] : (current?.path ?? []),
      previousPath: current?.path ?? [],
      revision: bundle.revision,
      bundle: {
        ...fields,
        distributedAt: this.now().toISOString(),
        nodeKey: heldKey === undefined ? this.nodeKeyOf(nodeId) : heldKey,
      },
    };
  }

  /**
   * The held bundles whose node key is not the one the secret gives now (the secret was rotated, or
   * the entry predates node keys), again with the right key: without it, their nodes' relays would
   * go on accepting tokens of the old secret, or refuse the new ones. Marked as a catch-up: the
   * bundle is not new, its lag says nothing of the pipeline.
   */
  rekeyed(): UnnumberedEntry[] {
    const entries: UnnumberedEntry[] = [];
    for (const current of this.log.latestEntries()) {
      const bundle = current.bundle;
      if (!bundle) continue;
      const key = this.nodeKeyOf(current.nodeId);
      if (bundle.nodeKey === key && bundle.tokenDigest === undefined) continue;
      const { seq: _held, ...held } = current;
      const { tokenDigest: _legacy, ...fields } = bundle;
      entries.push({
        ...held,
        previousPath: current.path,
        bundle: { ...fields, nodeKey: key, catchUp: true },
      });
    }
    // Once none is to be written again (at a start without a rotated secret), each held key is current.
    if (entries.length === 0) this.heldKeysCurrent = true;
    return entries;
  }

  /** A node has no bundle any more (ignored, or deleted at `revision`). */
  bundleRemoved(nodeId: string, revision: number): UnnumberedEntry | null {
    const current = this.log.latest(nodeId);
    if (!current || current.bundle === null || revision < this.heldRevision(current)) return null;
    return { nodeId, path: current.path, previousPath: current.path, revision, bundle: null };
  }

  /**
   * A new relay tree: entries for the named nodes (all held nodes when none are named) whose
   * serving path differs from the one their latest entry gives.
   */
  placeOn(topology: RelayTopology, nodeIds: Iterable<string> | null): UnnumberedEntry[] {
    this.topology = topology;
    const entries: UnnumberedEntry[] = [];
    const candidates = nodeIds ?? [...this.log.latestEntries()].map((entry) => entry.nodeId);
    for (const nodeId of candidates) {
      const current = this.log.latest(nodeId);
      if (!current) continue;
      const path = topology.servingPath(nodeId);
      if (samePath(path, current.path)) continue;
      const { seq: _held, ...held } = current;
      entries.push({ ...held, path: [...path], previousPath: current.path });
    }
    return entries;
  }
}

function samePath(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((relay, index) => relay === b[index]);
}
