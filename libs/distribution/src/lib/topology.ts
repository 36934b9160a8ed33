import { z } from 'zod';

/** The policy server of the fleet's root: its own relay serves the whole tree. */
export const ROOT_RELAY = 'root';

const placement = z.looseObject({
  id: z.string().min(1),
  policyServer: z.string().min(1).default(ROOT_RELAY),
});
const changeSetPlacements = z.looseObject({
  upsert: z
    .looseObject({ nodes: z.array(placement).optional(), relays: z.array(placement).optional() })
    .optional(),
  delete: z
    .looseObject({ nodes: z.array(z.string()).optional(), relays: z.array(z.string()).optional() })
    .optional(),
});

export interface Placement {
  readonly id: string;
  readonly policyServer: string;
}

/**
 * Where each node is served: the relay tree (relays under `root` or under another relay) and each
 * node's policy server. A node's serving path is the chain of relays from `root` down to its policy
 * server; every relay on it keeps the node's bundle, and passes it down.
 */
export class RelayTopology {
  private readonly nodes = new Map<string, string>();
  private readonly relays = new Map<string, string>();

  static of(fleet: {
    readonly nodes: readonly Placement[];
    readonly relays: readonly Placement[];
  }): RelayTopology {
    const topology = new RelayTopology();
    for (const node of fleet.nodes) topology.nodes.set(node.id, node.policyServer);
    for (const relay of fleet.relays) topology.relays.set(relay.id, relay.policyServer);
    return topology;
  }

  /** The relays serving the node, from `root` down; empty when the node is not in the fleet. */
  servingPath(nodeId: string): readonly string[] {
    const server = this.nodes.get(nodeId);
    return server === undefined ? [] : this.relayPath(server);
  }

  /** The relays of the tree (`root` is implicit: not one of them). */
  relayIds(): IterableIterator<string> {
    return this.relays.keys();
  }

  hasRelay(relayId: string): boolean {
    return this.relays.has(relayId);
  }

  /** `root`, then each relay down to this one. A broken chain (never valid config) ends at what is known. */
  relayPath(relayId: string): readonly string[] {
    const chain: string[] = [];
    const seen = new Set<string>();
    let current: string | undefined = relayId;
    while (current !== undefined && current !== ROOT_RELAY && !seen.has(current)) {
      seen.add(current);
      chain.push(current);
      current = this.relays.get(current);
    }
    chain.push(ROOT_RELAY);
    return chain.reverse();
  }

  /**
   * Applies the node and relay sections of a change set (fleet-format.md) and names the nodes whose
   * serving path may have changed: the nodes upserted or deleted, and every node when a relay moved.
   * Throws with the JSON path when those sections are malformed.
   */
  apply(changeSet: unknown): ReadonlySet<string> {
    const parsed = changeSetPlacements.safeParse(changeSet);
    if (!parsed.success)
      throw new Error(
        parsed.error.issues
          .map((issue) => `$.changeSet.${issue.path.join('.')}: ${issue.message}`)
          .join('; '),
      );
    const { upsert, delete: deletions } = parsed.data;
    const touched = new Set<string>();
    let relaysMoved = false;
    for (const relay of upsert?.relays ?? []) {
      if (this.relays.get(relay.id) !== relay.policyServer) relaysMoved = true;
      this.relays.set(relay.id, relay.policyServer);
    }
    for (const relayId of deletions?.relays ?? []) relaysMoved = this.relays.delete(relayId) || relaysMoved;
    for (const node of upsert?.nodes ?? []) {
      this.nodes.set(node.id, node.policyServer);
      touched.add(node.id);
    }
    for (const nodeId of deletions?.nodes ?? []) {
      this.nodes.delete(nodeId);
      touched.add(nodeId);
    }
    if (relaysMoved) for (const nodeId of this.nodes.keys()) touched.add(nodeId);
    return touched;
  }
}
