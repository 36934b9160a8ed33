import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { EngineOptions, Fleet, ParsedChangeSet } from '@policygen/engine';
import { ownerOf, poolKeyPrefix, PROTOCOL_VERSION } from './protocol';
import type {
  ComputeEntry,
  ComputeOutput,
  WorkerInit,
  WorkerOutput,
  WorkerReply,
  WorkerRequest,
} from './protocol';

export type { ComputeOutput, WorkerOutput } from './protocol';

export interface PoolOptions {
  readonly fleet: Fleet;
  /** Worker threads (default `os.availableParallelism()`). */
  readonly threads?: number;
  /** The options of every worker's engine: the same as the caller's engine, or results differ. */
  readonly engine?: EngineOptions;
  /**
   * The built worker script (default: generation-worker.js next to the running bundle, as
   * `npm run build` writes dist/cli/policygen.js and dist/cli/generation-worker.js side by side).
   */
  readonly workerFile?: string;
  /** Node ids per task (default: about eight tasks per thread, from 64 to 2,000 ids). */
  readonly chunkSize?: number;
}

export interface ComputeOptions {
  readonly materialise?: boolean;
  readonly generatedAt?: number;
  /** Each chunk also carries its computed nodes' memberships (see `WorkerOutput.memberships`). */
  readonly memberships?: boolean;
}

const MIN_CHUNK = 64;
const MAX_CHUNK = 2_000;
const CHUNKS_PER_THREAD = 8;
/** Tasks handed to a thread at once, so it never waits for the main thread between two. */
const TASKS_IN_FLIGHT_PER_THREAD = 2;

function workerFileOf(option: string | undefined): string {
  const file = resolve(option ?? join(__dirname, 'generation-worker.js'));
  if (!existsSync(file)) {
    throw new Error(
      `the generation worker script ${file} does not exist: run \`npm run build\`, which writes ` +
        'dist/cli/generation-worker.js (and pass that path as workerFile when not running the bundled CLI)',
    );
  }
  return file;
}

function chunksOf<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let start = 0; start < items.length; start += size) chunks.push(items.slice(start, start + size));
  return chunks;
}

/** The parts' memberships, in the order of their results (parts are joined in order). */
function concatenated(outputs: readonly WorkerOutput[]): Uint32Array {
  const joined = new Uint32Array(
    outputs.reduce((total, output) => total + (output.memberships?.length ?? 0), 0),
  );
  let at = 0;
  for (const output of outputs) {
    if (!output.memberships)
      throw new Error('a generation worker answered without the memberships asked for');
    joined.set(output.memberships, at);
    at += output.memberships.length;
  }
  return joined;
}

/** Part of a chunk: the nodes of one thread (see `ownerOf`). */
interface Part {
  readonly thread: number;
  readonly nodes: readonly ComputeEntry[];
}

/** A regeneration candidate, with the inputsKey of the result the caller holds for it, if any. */
export interface RegenerationEntry {
  readonly nodeId: string;
  readonly heldKey?: string;
}

interface Waiter {
  readonly resolve: (output: WorkerOutput | undefined) => void;
  readonly reject: (error: Error) => void;
}

/** One worker and the requests it has not answered yet; it answers them in the order they were sent. */
class PoolThread {
  private readonly waiting = new Map<number, Waiter>();
  readonly ready: Promise<number>;

  constructor(
    readonly index: number,
    readonly worker: Worker,
    onFatal: (error: Error) => void,
  ) {
    this.ready = new Promise<number>((resolveReady, rejectReady) => {
      worker.on('message', (message: WorkerReply) => {
        if (message.kind === 'ready') {
          if (message.protocol === PROTOCOL_VERSION) {
            this.waiting.delete(0);
            resolveReady(message.revision);
          } else
            onFatal(
              new Error(
                `the generation worker script speaks protocol ${message.protocol}, this pool ${PROTOCOL_VERSION}: ` +
                  'it is out of date, run `npm run build`',
              ),
            );
          return;
        }
        const waiter = this.waiting.get(message.id);
        if (!waiter) return;
        this.waiting.delete(message.id);
        if (message.kind === 'done') waiter.resolve(message.output);
        else {
          const error = new Error(`generation worker ${index}: ${message.fault.message}`);
          if (message.fault.stack !== undefined)
            error.stack = `${error.message}\n(worker) ${message.fault.stack}`;
          waiter.reject(error);
        }
      });
      // Id 0 stands for the startup, so a worker dying before it is ready rejects `ready` too.
      this.waiting.set(0, { resolve: () => undefined, reject: rejectReady });
    });
    worker.on('error', (error) =>
      onFatal(new Error(`generation worker ${index} failed: ${error.message}`, { cause: error })),
    );
    worker.on('messageerror', (error) =>
      onFatal(new Error(`generation worker ${index} sent an unreadable message: ${error.message}`)),
    );
    worker.on('exit', (code) => onFatal(new Error(`generation worker ${index} exited with code ${code}`)));
  }

  request(message: WorkerRequest): Promise<WorkerOutput | undefined> {
    return new Promise((resolveRequest, rejectRequest) => {
      this.waiting.set(message.id, { resolve: resolveRequest, reject: rejectRequest });
      try {
        this.worker.postMessage(message);
      } catch (error) {
        this.waiting.delete(message.id);
        rejectRequest(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  rejectAll(error: Error): void {
    const waiters = [...this.waiting.values()];
    this.waiting.clear();
    for (const waiter of waiters) waiter.reject(error);
  }
}

/**
 * Generation on worker threads. Each worker holds its own GenerationEngine, built once from the
 * fleet; `applyValid` replays a change set on every worker, so they stay at the caller's revision;
 * `compute` splits node ids into chunks, hands them to the least busy threads and returns the
 * results in the order asked for, whichever thread computed them.
 *
 * Operations run one after the other in call order. A worker that dies, or fails to apply a change
 * set, leaves its engine at an unknown revision: the pool then stops, every pending and later call
 * rejecting with the cause. `close()` ends every thread; a pool holds the process open until then.
 *
 * What a caller holding a `GenerationEngine` uses (see regenerate.ts): `generateFleetInParallel`
 * for an import (the workers' memberships build the caller's index: one index's CPU, not two),
 * `regenerateInParallel` for a fleet-wide change, and `regenerateOutcomesInParallel` where each
 * node's outcome and bundle are published (the generator service's loop). Every change set the
 * caller's engine accepts is replayed with `applyValid`, in order, before the next regeneration.
 */
export class GenerationPool {
  private readonly threads: PoolThread[] = [];
  private readonly chunkSize: number | undefined;
  private nextRequestId = 1;
  private tail: Promise<unknown> = Promise.resolve();
  private failure: Error | undefined;
  private closed = false;
  private currentRevision = 0;
  /** Change sets replayed and not sent yet: they go together (see `applyValid`). */
  private waitingApply: { changes: ParsedChangeSet[]; revision: number; done: Promise<void> } | undefined;

  private constructor(
    private readonly id: string,
    workers: readonly Worker[],
    chunkSize: number | undefined,
  ) {
    this.chunkSize = chunkSize;
    workers.forEach((worker, index) => {
      this.threads.push(new PoolThread(index, worker, (error) => this.fail(error)));
    });
  }

  /** Starts the workers and resolves once each has built its engine. */
  static async start(options: PoolOptions): Promise<GenerationPool> {
    const threads = options.threads ?? availableParallelism();
    if (!Number.isInteger(threads) || threads < 1)
      throw new Error(`threads must be a positive integer, not ${threads}`);
    if (options.chunkSize !== undefined && (!Number.isInteger(options.chunkSize) || options.chunkSize < 1)) {
      throw new Error(`chunkSize must be a positive integer, not ${options.chunkSize}`);
    }
    const workerFile = workerFileOf(options.workerFile);
    const id = randomUUID();
    const workers: Worker[] = [];
    // Each worker gets its own share of the nodes only: less to copy, parse and keep.
    const shares = Array.from({ length: threads }, (): Fleet['nodes'][number][] => []);
    for (const node of options.fleet.nodes) shares[ownerOf(node.id, threads)]?.push(node);
    try {
      for (let index = 0; index < threads; index++) {
        const workerData: WorkerInit = {
          fleetJson: JSON.stringify({ ...options.fleet, nodes: shares[index] }),
          thread: index,
          threads,
          engine: options.engine ?? {},
          keyPrefix: `${poolKeyPrefix(id)}${index}:`,
        };
        workers.push(new Worker(workerFile, { workerData }));
      }
    } catch (error) {
      await Promise.all(workers.map((worker) => worker.terminate()));
      throw error;
    }
    const pool = new GenerationPool(id, workers, options.chunkSize);
    try {
      const revisions = await Promise.all(pool.threads.map((thread) => thread.ready));
      pool.currentRevision = revisions[0] ?? 0;
    } catch (error) {
      await pool.close();
      throw error;
    }
    return pool;
  }

  get size(): number {
    return this.threads.length;
  }

  /** The revision every worker's engine is at (or will be, once the calls made so far are done). */
  get revision(): number {
    return this.currentRevision;
  }

  /**
   * Replays a change set the caller's engine accepted on every worker's engine, in call order.
   * Change sets replayed while an earlier operation runs travel together, in one message per worker
   * (a burst costs one round trip, not one per change set): callers need not await each one.
   */
  applyValid(change: ParsedChangeSet): Promise<void> {
    const revision = ++this.currentRevision;
    const waiting = this.waitingApply;
    if (waiting) {
      waiting.changes.push(change);
      waiting.revision = revision;
      return waiting.done;
    }
    const batch: { changes: ParsedChangeSet[]; revision: number; done: Promise<void> } = {
      changes: [change],
      revision,
      done: Promise.resolve(),
    };
    this.waitingApply = batch;
    batch.done = this.serially(async () => {
      // From here on, change sets go to the next batch.
      if (this.waitingApply === batch) this.waitingApply = undefined;
      const { changes, revision: reached } = batch;
      try {
        await Promise.all(
          this.threads.map((thread) =>
            thread.request({ id: this.nextRequestId++, kind: 'apply', changes, revision: reached }),
          ),
        );
      } catch (error) {
        const cause = error instanceof Error ? error : new Error(String(error));
        this.fail(
          new Error(`a worker could not apply the change sets up to revision ${reached}: ${cause.message}`),
        );
        throw cause;
      }
    });
    return batch.done;
  }

  /**
   * Computes nodes at the pool's revision; the results are in the order of `nodeIds`. Their
   * inputsKeys are the workers': never equal to one of another engine.
   */
  async compute(nodeIds: readonly string[], options: ComputeOptions = {}): Promise<ComputeOutput> {
    const results: ComputeOutput['results'] = [];
    const bundles: ComputeOutput['bundles'] = [];
    await this.computeInChunks(nodeIds, options, (chunk) => {
      results.push(...chunk.results);
      bundles.push(...chunk.bundles);
    });
    return { results, bundles };
  }

  /**
   * Computes nodes and hands each chunk to `onChunk` as soon as it and every chunk before it are
   * done: in the order of `nodeIds`, holding only a few chunks at a time. A throwing `onChunk`
   * rejects the call and stops handing out chunks.
   */
  computeInChunks(
    nodeIds: readonly string[],
    options: ComputeOptions,
    onChunk: (chunk: ComputeOutput) => void,
  ): Promise<void> {
    const revision = this.currentRevision;
    const idChunks = chunksOf(nodeIds, this.chunkSizeFor(nodeIds.length));
    const chunks = idChunks.map((chunk) => this.partsOf(chunk.map((nodeId) => ({ nodeId }))));
    let delivered = 0;
    // Each worker answers for its own nodes: put a chunk's results back in the order asked.
    const inOrder = (chunk: WorkerOutput): void => {
      const ids = idChunks[delivered++] ?? [];
      const rank = new Map(ids.map((nodeId, index) => [nodeId, index]));
      const byRank = <T extends { nodeId: string }>(a: T, b: T): number =>
        (rank.get(a.nodeId) ?? 0) - (rank.get(b.nodeId) ?? 0);
      onChunk({ results: [...chunk.results].sort(byRank), bundles: [...chunk.bundles].sort(byRank) });
    };
    return this.serially(() => this.runChunks(chunks, options, false, revision, inOrder));
  }

  /**
   * The regeneration step of `regenerateInParallel`: like `computeInChunks`, but a node whose held
   * result a worker of this pool computed goes back to that worker, which skips it when its inputs
   * are unchanged (only that worker's engine can tell), and every worker keeps what it computes.
   * Each chunk's nodes are a run of `entries`; within a chunk, results come grouped by worker.
   * An `onChunk` returning a promise is awaited before the next chunk is handed to it, and no more
   * than a few chunks are computed ahead of it (backpressure: publishing may be the slow part).
   */
  regenerateInChunks(
    entries: readonly RegenerationEntry[],
    options: ComputeOptions,
    onChunk: (chunk: WorkerOutput) => void | Promise<void>,
  ): Promise<void> {
    const revision = this.currentRevision;
    const chunks = chunksOf(entries, this.chunkSizeFor(entries.length)).map((chunk) => this.partsOf(chunk));
    return this.serially(() => this.runChunks(chunks, options, true, revision, onChunk));
  }

  /** Ends every thread; calls not done reject. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new Error('the generation pool is closed');
    for (const thread of this.threads) thread.rejectAll(error);
    await Promise.all(this.threads.map((thread) => thread.worker.terminate()));
  }

  private chunkSizeFor(count: number): number {
    return (
      this.chunkSize ??
      Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, Math.ceil(count / (this.threads.length * CHUNKS_PER_THREAD))))
    );
  }

  /**
   * Splits a chunk by the worker each node belongs to (`ownerOf`); a held key that worker made is
   * passed on so it can skip the node, any other is dropped.
   */
  private partsOf(entries: readonly RegenerationEntry[]): Part[] {
    const owned = new Map<number, ComputeEntry[]>();
    for (const { nodeId, heldKey } of entries) {
      const thread = ownerOf(nodeId, this.threads.length);
      const held = heldKey === undefined ? undefined : this.heldBy(heldKey);
      let nodes = owned.get(thread);
      if (!nodes) owned.set(thread, (nodes = []));
      nodes.push(held?.thread === thread ? { nodeId, heldKey: held.key } : { nodeId });
    }
    return [...owned].map(([thread, nodes]) => ({ thread, nodes }));
  }

  private heldBy(heldKey: string): { thread: number; key: string } | undefined {
    const prefix = poolKeyPrefix(this.id);
    if (!heldKey.startsWith(prefix)) return undefined;
    const rest = heldKey.slice(prefix.length);
    const separator = rest.indexOf(':');
    const thread = Number(rest.slice(0, separator));
    if (separator < 0 || !Number.isInteger(thread) || thread < 0 || thread >= this.threads.length)
      return undefined;
    return { thread, key: rest.slice(separator + 1) };
  }

  private runChunks(
    chunks: readonly (readonly Part[])[],
    options: ComputeOptions,
    keep: boolean,
    revision: number,
    onChunk: (chunk: WorkerOutput) => void | Promise<void>,
  ): Promise<void> {
    const materialise = options.materialise ?? false;
    // Bundles are heavy: a few chunks ahead. Results are small: every chunk at once, so workers
    // keep computing while this thread is busy (building the caller's engine, say).
    const window = materialise ? this.threads.length * TASKS_IN_FLIGHT_PER_THREAD : chunks.length;
    return new Promise<void>((resolveRun, rejectRun) => {
      const finished = new Map<number, WorkerOutput>();
      let dispatched = 0;
      let delivered = 0;
      let settled = false;
      const stop = (error: unknown): void => {
        if (settled) return;
        settled = true;
        rejectRun(error);
      };
      let consuming = false;
      const deliver = (): void => {
        if (consuming) return;
        for (let chunk = finished.get(delivered); chunk && !settled; chunk = finished.get(delivered)) {
          finished.delete(delivered);
          const consumed = onChunk(chunk);
          if (consumed instanceof Promise) {
            consuming = true;
            consumed.then(() => {
              consuming = false;
              delivered++;
              dispatch();
              try {
                deliver();
              } catch (error) {
                stop(error);
              }
            }, stop);
            return;
          }
          delivered++;
        }
        if (delivered === chunks.length && !settled) {
          settled = true;
          resolveRun();
        }
      };
      const send = (part: Part): Promise<WorkerOutput> => {
        const thread = this.threads[part.thread];
        if (!thread) return Promise.reject(new Error(`no generation worker ${part.thread}`));
        const request: WorkerRequest = {
          id: this.nextRequestId++,
          kind: 'compute',
          revision,
          nodes: part.nodes,
          keep,
          materialise,
          ...(options.generatedAt === undefined ? {} : { generatedAt: options.generatedAt }),
          ...(options.memberships ? { memberships: true } : {}),
        };
        return thread.request(request).then((output) => {
          if (!output)
            throw new Error(`generation worker ${thread.index} answered a compute without results`);
          return output;
        });
      };
      const dispatch = (): void => {
        // No further ahead of delivery than the window, so the out-of-order chunks held stay few.
        while (!settled && dispatched < chunks.length && dispatched - delivered < window) {
          const index = dispatched++;
          Promise.all((chunks[index] ?? []).map(send)).then((outputs) => {
            if (settled) return;
            try {
              const memberships = options.memberships ? concatenated(outputs) : undefined;
              finished.set(index, {
                results: outputs.flatMap((output) => output.results),
                bundles: outputs.flatMap((output) => output.bundles),
                skipped: outputs.flatMap((output) => output.skipped),
                ...(memberships ? { memberships } : {}),
              });
              // Workers get their next chunks before this thread spends time in `onChunk`.
              dispatch();
              deliver();
              dispatch();
            } catch (error) {
              stop(error);
            }
          }, stop);
        }
      };
      if (chunks.length === 0) {
        settled = true;
        resolveRun();
        return;
      }
      dispatch();
    });
  }

  private serially<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.tail.then(() => {
      if (this.closed) throw new Error('the generation pool is closed');
      if (this.failure) throw this.failure;
      return operation();
    });
    this.tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private fail(error: Error): void {
    if (this.closed || this.failure) return;
    this.failure = error;
    for (const thread of this.threads) thread.rejectAll(error);
    for (const thread of this.threads) void thread.worker.terminate();
  }
}
