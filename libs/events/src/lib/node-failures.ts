import type { GenerationEvent } from '@policygen/sdk/contract';

/** A node's current failure: what went wrong, where, and since which revision it has failed. */
export interface NodeFailure {
  readonly nodeId: string;
  readonly code: string;
  readonly message: string;
  readonly directiveIds: readonly string[];
  readonly ruleIds: readonly string[];
  readonly sinceRevision: number;
  readonly since: string;
  /** The last revision the node generated at (its bundle is still served); null if it never did. */
  readonly lastGoodRevision: number | null;
}

export interface FailureQuery {
  readonly code?: string | undefined;
  readonly directiveId?: string | undefined;
  readonly ruleId?: string | undefined;
  /** The node id the previous page ended with. */
  readonly after?: string | undefined;
  readonly limit: number;
}

/**
 * Nodes' failures as `generation.result` events tell them (semantics.md §6): per node the last
 * revision it generated at, and its current failure, cleared when it generates again or leaves the
 * fleet. The generator keeps its own nodes' this way; the config API, every node's.
 */
export class NodeFailures {
  private readonly failures = new Map<string, NodeFailure>();
  private readonly lastGood = new Map<string, number>();

  /** The results of a cycle's slice, as published. */
  record(events: readonly GenerationEvent[], now = new Date()): void {
    const at = now.toISOString();
    for (const event of events)
      this.result(event.nodeId, event.revision, event.outcome, event.hash, event.errors, at);
  }

  /** One node's result, as its `generation.result` tells it (`at`: when it was told, ISO 8601). */
  result(
    nodeId: string,
    revision: number,
    outcome: GenerationEvent['outcome'],
    hash: string | null,
    errors: GenerationEvent['errors'],
    at: string,
  ): void {
    if (outcome !== 'failed') {
      this.failures.delete(nodeId);
      if (hash === null) this.lastGood.delete(nodeId);
      else this.lastGood.set(nodeId, revision);
      return;
    }
    const first = errors[0];
    const previous = this.failures.get(nodeId);
    const code = first?.code ?? 'UNKNOWN';
    const message = errors.map((error) => error.message).join('\n');
    const same = previous !== undefined && previous.code === code && previous.message === message;
    this.failures.set(nodeId, {
      nodeId,
      code,
      message,
      directiveIds: unique(errors.flatMap((error) => error.directiveIds ?? [])),
      ruleIds: unique(errors.flatMap((error) => error.ruleIds ?? [])),
      sinceRevision: same ? previous.sinceRevision : revision,
      since: same ? previous.since : at,
      lastGoodRevision: this.lastGood.get(nodeId) ?? null,
    });
  }

  /** Nodes gone from the fleet, or from this instance's share: neither failing nor served here. */
  forget(nodeIds: Iterable<string>): void {
    for (const nodeId of nodeIds) {
      this.failures.delete(nodeId);
      this.lastGood.delete(nodeId);
    }
  }

  /** Keeps only the nodes this instance owns, after a rebalance. */
  retain(owns: (nodeId: string) => boolean): void {
    for (const nodeId of [...this.failures.keys()]) if (!owns(nodeId)) this.failures.delete(nodeId);
    for (const nodeId of [...this.lastGood.keys()]) if (!owns(nodeId)) this.lastGood.delete(nodeId);
  }

  /** The failing nodes' ids. */
  nodeIds(): string[] {
    return [...this.failures.keys()];
  }

  get count(): number {
    return this.failures.size;
  }

  of(nodeId: string): NodeFailure | undefined {
    return this.failures.get(nodeId);
  }

  /** Failing nodes per error code. */
  byCode(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const failure of this.failures.values())
      counts.set(failure.code, (counts.get(failure.code) ?? 0) + 1);
    return counts;
  }

  /** The first failures by node id, for a status page. */
  list(limit: number): NodeFailure[] {
    return this.page({ limit }).items;
  }

  /** Failures in node id order, after a node id, filtered by code, directive or rule. */
  page(query: FailureQuery): {
    readonly total: number;
    readonly items: NodeFailure[];
    readonly next: string | null;
  } {
    const matching = [...this.failures.values()]
      .filter(
        (failure) =>
          (query.code === undefined || failure.code === query.code) &&
          (query.directiveId === undefined || failure.directiveIds.includes(query.directiveId)) &&
          (query.ruleId === undefined || failure.ruleIds.includes(query.ruleId)),
      )
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
    const after = query.after;
    const start = after === undefined ? 0 : matching.findIndex((failure) => failure.nodeId > after);
    const items = start < 0 ? [] : matching.slice(start, start + query.limit);
    const last = items[items.length - 1];
    const more = start >= 0 && start + query.limit < matching.length;
    return { total: matching.length, items, next: more && last ? last.nodeId : null };
  }
}

function unique(ids: readonly string[]): string[] {
  return [...new Set(ids)].sort();
}
