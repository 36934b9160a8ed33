import { compareCodeUnits } from '@policygen/engine';
import type {
  EngineOptions,
  NodeBundle,
  NodeMemberships,
  NodeResult,
  ParsedChangeSet,
} from '@policygen/engine';

/**
 * Bumped whenever the messages below change, so a pool refuses a worker script built from older
 * sources instead of misreading it.
 */
export const PROTOCOL_VERSION = 5;

/** The worker's `workerData`: cloned into each worker once, when it starts. */
export interface WorkerInit {
  /**
   * The fleet with this worker's share of the nodes, as JSON text: one string copies to a thread far
   * faster than a graph of objects.
   */
  readonly fleetJson: string;
  readonly engine: EngineOptions;
  /** This worker's share of the nodes: those `ownerOf` gives to `thread` of `threads`. */
  readonly thread: number;
  readonly threads: number;
  /** Prefixes the inputsKey of every result this worker computes (see `poolKeyPrefix`). */
  readonly keyPrefix: string;
}

/** A node to compute; `heldKey` is set when the caller holds a result this worker computed. */
export interface ComputeEntry {
  readonly nodeId: string;
  /** That result's inputsKey without the worker's prefix: the node is skipped if its inputs still have it. */
  readonly heldKey?: string;
}

export type WorkerRequest =
  | {
      readonly id: number;
      readonly kind: 'apply';
      /** Change sets in order, each moving the revision by one. */
      readonly changes: readonly ParsedChangeSet[];
      /** The revision the worker's engine must be at once the change sets are applied. */
      readonly revision: number;
    }
  | {
      readonly id: number;
      readonly kind: 'compute';
      /** The revision the worker's engine must be at: a worker behind or ahead is a bug, never a result. */
      readonly revision: number;
      readonly nodes: readonly ComputeEntry[];
      /** Set by a regeneration: the worker keeps the results, to skip the nodes next time. */
      readonly keep: boolean;
      readonly materialise: boolean;
      readonly generatedAt?: number;
      /** Send each computed node's memberships too (see `encodeMemberships`). */
      readonly memberships?: boolean;
    };

export interface ComputeOutput {
  /** The computed nodes' results, in the order asked for. */
  readonly results: NodeResult[];
  /** With `materialise`: each computed node's bundle, in the same order; otherwise empty. */
  readonly bundles: NodeBundle[];
}

export interface WorkerOutput extends ComputeOutput {
  /** Nodes whose inputs are those of the held result: not computed. */
  readonly skipped: string[];
  /** When asked for: the memberships of the nodes of `results`, in their order (`encodeMemberships`). */
  readonly memberships?: Uint32Array;
}

export interface WorkerFault {
  readonly message: string;
  readonly stack?: string;
}

export type WorkerReply =
  | { readonly kind: 'ready'; readonly protocol: number; readonly revision: number }
  | { readonly kind: 'done'; readonly id: number; readonly output?: WorkerOutput }
  | { readonly kind: 'failed'; readonly id: number; readonly fault: WorkerFault };

/**
 * An inputsKey is made of serials local to the engine that computed it: a worker's key could equal
 * an unrelated key of another engine and make it skip a node whose inputs did change. Prefixed with
 * the pool and the worker (`worker:<pool>:<thread>:<key>`), it never equals another engine's key,
 * and it says which worker can tell whether the node's inputs changed since.
 */
export function poolKeyPrefix(poolId: string): string {
  return `worker:${poolId}:`;
}

/**
 * The worker a node belongs to, by a hash of its id: always the same one, so each worker indexes
 * and caches only its own share of the fleet (memberships and targets are per node).
 */
export function ownerOf(nodeId: string, threads: number): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < nodeId.length; index++) {
    hash ^= nodeId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % threads;
}

/**
 * Group and rule ids by position, sorted: how memberships travel between threads (numbers in one
 * transferred buffer, not a hundred thousand arrays of strings to clone). Both ends compute it from
 * the same configuration.
 */
export interface MembershipCodec {
  readonly groupIds: readonly string[];
  readonly ruleIds: readonly string[];
}

export function membershipCodec(groupIds: Iterable<string>, ruleIds: Iterable<string>): MembershipCodec {
  return { groupIds: [...groupIds].sort(compareCodeUnits), ruleIds: [...ruleIds].sort(compareCodeUnits) };
}

/** Per node, in order: its number of groups, their positions, its number of rules, their positions. */
export function encodeMemberships(
  codec: MembershipCodec,
  nodes: readonly { readonly groups: readonly string[]; readonly rules: readonly string[] }[],
): Uint32Array {
  const groupAt = new Map(codec.groupIds.map((groupId, index) => [groupId, index]));
  const ruleAt = new Map(codec.ruleIds.map((ruleId, index) => [ruleId, index]));
  let length = 0;
  for (const node of nodes) length += 2 + node.groups.length + node.rules.length;
  const encoded = new Uint32Array(length);
  let at = 0;
  const put = (ids: readonly string[], positions: ReadonlyMap<string, number>, kind: string): void => {
    encoded[at++] = ids.length;
    for (const id of ids) {
      const position = positions.get(id);
      if (position === undefined) throw new Error(`no ${kind} ${id} in the membership codec`);
      encoded[at++] = position;
    }
  };
  for (const node of nodes) {
    put(node.groups, groupAt, 'group');
    put(node.rules, ruleAt, 'rule');
  }
  return encoded;
}

/** The memberships `encodeMemberships` encoded, one entry per node of `nodeIds` (the same order). */
export function decodeMemberships(
  codec: MembershipCodec,
  nodeIds: readonly string[],
  encoded: Uint32Array,
  into: NodeMemberships & {
    readonly groupsOfNode: Map<string, readonly string[]>;
    readonly rulesOfNode: Map<string, readonly string[]>;
  },
  /** Per codec group and per codec rule, the nodes: filled too when given (an index's members). */
  sets?: { readonly members: readonly Set<string>[]; readonly ruleTargets: readonly Set<string>[] },
): void {
  let at = 0;
  const take = (
    nodeId: string,
    ids: readonly string[],
    byId: readonly Set<string>[] | undefined,
  ): string[] => {
    const count = encoded[at++] ?? 0;
    const taken = new Array<string>(count);
    for (let index = 0; index < count; index++) {
      const code = encoded[at++] as number;
      const id = ids[code];
      if (id === undefined)
        throw new Error('memberships out of the codec: the worker saw another configuration');
      taken[index] = id;
      byId?.[code]?.add(nodeId);
    }
    return taken;
  };
  for (const nodeId of nodeIds) {
    into.groupsOfNode.set(nodeId, take(nodeId, codec.groupIds, sets?.members));
    into.rulesOfNode.set(nodeId, take(nodeId, codec.ruleIds, sets?.ruleTargets));
  }
  if (at !== encoded.length) throw new Error('memberships and nodes do not match');
}
