import type { EngineOptions, Fleet, NodeBundle, NodeResult, ParsedChangeSet } from '@policygen/engine';

/**
 * Bumped whenever the messages below change, so a pool refuses a worker script built from older
 * sources instead of misreading it.
 */
export const PROTOCOL_VERSION = 1;

/** The worker's `workerData`: cloned into each worker once, when it starts. */
export interface WorkerInit {
  readonly fleet: Fleet;
  readonly engine: EngineOptions;
}

export type WorkerRequest =
  | {
      readonly id: number;
      readonly kind: 'apply';
      readonly change: ParsedChangeSet;
      /** The revision the worker's engine must be at once the change set is applied. */
      readonly revision: number;
    }
  | {
      readonly id: number;
      readonly kind: 'compute';
      /** The revision the worker's engine must be at: a worker behind or ahead is a bug, never a result. */
      readonly revision: number;
      readonly nodeIds: readonly string[];
      readonly materialise: boolean;
      readonly generatedAt?: number;
    };

export interface ComputeOutput {
  /** In the order of the node ids asked for. */
  readonly results: NodeResult[];
  /** With `materialise`: each computed node's bundle, in the same order; otherwise empty. */
  readonly bundles: NodeBundle[];
}

export interface WorkerFault {
  readonly message: string;
  readonly stack?: string;
}

export type WorkerReply =
  | { readonly kind: 'ready'; readonly protocol: number; readonly revision: number }
  | { readonly kind: 'done'; readonly id: number; readonly output?: ComputeOutput }
  | { readonly kind: 'failed'; readonly id: number; readonly fault: WorkerFault };

/**
 * Prefixes the `inputsKey` of a result computed in a worker. Keys are made of serials local to the
 * engine that computed them, so a worker's key could equal an unrelated key of another engine and
 * make it skip a node whose inputs did change; prefixed, it never equals one.
 */
export const WORKER_KEY_PREFIX = 'worker:';
