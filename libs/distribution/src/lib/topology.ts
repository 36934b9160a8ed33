/** The policy server of the fleet's root: its own relay serves the whole tree. */
export const ROOT_RELAY = 'root';

export interface Placement {
  readonly id: string;
  readonly policyServer: string;
}

/** What a change set says about the relay tree: its node and relay sections, nothing else. */
export interface PlacementChanges {
  readonly nodes: readonly Placement[];
  readonly relays: readonly Placement[];
  readonly deletedNodes: readonly string[];
  readonly deletedRelays: readonly string[];
}

type Read<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly issue: string };

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A section of an object that may be absent, or an issue at `path`. */
function optionalRecord(value: unknown, path: string): Read<Readonly<Record<string, unknown>>> {
  if (value === undefined) return { ok: true, value: {} };
  return isRecord(value) ? { ok: true, value } : { ok: false, issue: `${path}: expected an object` };
}

function placementsAt(value: unknown, path: string): Read<Placement[]> {
  if (value === undefined) return { ok: true, value: [] };
  if (!Array.isArray(value)) return { ok: false, issue: `${path}: expected an array` };
  const placements: Placement[] = [];
  for (let index = 0; index < value.length; index++) {
    const item: unknown = value[index];
    if (!isRecord(item)) return { ok: false, issue: `${path}.${index}: expected an object` };
    const { id, policyServer = ROOT_RELAY } = item;
    if (typeof id !== 'string' || id.length === 0)
      return { ok: false, issue: `${path}.${index}.id: expected a non-empty string` };
    if (typeof policyServer !== 'string' || policyServer.length === 0)
      return { ok: false, issue: `${path}.${index}.policyServer: expected a non-empty string` };
    placements.push({ id, policyServer });
  }
  return { ok: true, value: placements };
}

function idsAt(value: unknown, path: string): Read<string[]> {
  if (value === undefined) return { ok: true, value: [] };
  if (!Array.isArray(value)) return { ok: false, issue: `${path}: expected an array` };
  for (let index = 0; index < value.length; index++)
    if (typeof value[index] !== 'string') return { ok: false, issue: `${path}.${index}: expected a string` };
  return { ok: true, value: value as string[] };
}

/**
 * The node and relay sections of a change set (fleet-format.md), read in place: an import's change
 * set holds every node with its properties, and a schema's parse copied all of it to keep two fields
 * of each (7% of the distribution-service's samples in an import). The first malformed part is
 * named by its JSON path, under `$.changeSet`.
 */
export function readPlacementChanges(changeSet: unknown): Read<PlacementChanges> {
  const root = optionalRecord(changeSet, '$.changeSet');
  if (!root.ok) return root;
  const upsert = optionalRecord(root.value['upsert'], '$.changeSet.upsert');
  if (!upsert.ok) return upsert;
  const deletions = optionalRecord(root.value['delete'], '$.changeSet.delete');
  if (!deletions.ok) return deletions;
  const relays = placementsAt(upsert.value['relays'], '$.changeSet.upsert.relays');
  if (!relays.ok) return relays;
  const nodes = placementsAt(upsert.value['nodes'], '$.changeSet.upsert.nodes');
  if (!nodes.ok) return nodes;
  const deletedRelays = idsAt(deletions.value['relays'], '$.changeSet.delete.relays');
  if (!deletedRelays.ok) return deletedRelays;
  const deletedNodes = idsAt(deletions.value['nodes'], '$.changeSet.delete.nodes');
  if (!deletedNodes.ok) return deletedNodes;
  return {
    ok: true,
    value: {
      nodes: nodes.value,
      relays: relays.value,
      deletedNodes: deletedNodes.value,
      deletedRelays: deletedRelays.value,
    },
  };
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
    const read = readPlacementChanges(changeSet);
    if (!read.ok) throw new Error(read.issue);
    const { nodes, relays, deletedNodes, deletedRelays } = read.value;
    const touched = new Set<string>();
    let relaysMoved = false;
    for (const relay of relays) {
      if (this.relays.get(relay.id) !== relay.policyServer) relaysMoved = true;
      this.relays.set(relay.id, relay.policyServer);
    }
    for (const relayId of deletedRelays) relaysMoved = this.relays.delete(relayId) || relaysMoved;
    for (const node of nodes) {
      this.nodes.set(node.id, node.policyServer);
      touched.add(node.id);
    }
    for (const nodeId of deletedNodes) {
      this.nodes.delete(nodeId);
      touched.add(nodeId);
    }
    if (relaysMoved) for (const nodeId of this.nodes.keys()) touched.add(nodeId);
    return touched;
  }
}
