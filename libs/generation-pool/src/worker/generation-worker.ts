// The generation worker: an entry point of its own, bundled to dist/cli/generation-worker.js by
// tools/build/bundle-cli.mjs. It is never imported by the library.
import { parentPort, workerData } from 'node:worker_threads';
import { GenerationEngine } from '@policygen/engine';
import type { Fleet, NodeBundle, NodeResult, ParsedChangeSet } from '@policygen/engine';
import { encodeMemberships, membershipCodec, ownerOf, PROTOCOL_VERSION } from '../lib/protocol';
import type { WorkerInit, WorkerOutput, WorkerReply, WorkerRequest } from '../lib/protocol';

const port = parentPort;
if (!port) throw new Error('generation-worker.js runs as a worker thread of a GenerationPool');

const init = workerData as WorkerInit;
// A worker belongs to exactly one pool, so its one engine is the pool's: no key needed.
const mine = (nodeId: string): boolean => ownerOf(nodeId, init.threads) === init.thread;
// The pool sends this worker's share of the nodes only (see `ownerOf`).
const engine = GenerationEngine.fromFleet(JSON.parse(init.fleetJson) as Fleet, init.engine);

/** A change set with only this worker's nodes: the others are indexed by their own workers. */
function share(change: ParsedChangeSet): ParsedChangeSet {
  return {
    upsert: { ...change.upsert, nodes: change.upsert.nodes.filter((node) => mine(node.id)) },
    delete: { ...change.delete, nodes: change.delete.nodes.filter(mine) },
  };
}

/** The memberships buffer moves to the pool's thread instead of being copied. */
function transfers(output: WorkerOutput): ArrayBuffer[] {
  return output.memberships ? [output.memberships.buffer as ArrayBuffer] : [];
}

function reply(message: WorkerReply): void {
  port?.postMessage(message);
}

function handle(request: WorkerRequest): WorkerOutput | undefined {
  if (request.kind === 'apply') {
    for (const change of request.changes) engine.applyValid(share(change));
    if (engine.revision !== request.revision) {
      throw new Error(`worker engine reached revision ${engine.revision}, expected ${request.revision}`);
    }
    return undefined;
  }
  if (engine.revision !== request.revision) {
    throw new Error(
      `worker engine is at revision ${engine.revision}, asked to compute at ${request.revision}`,
    );
  }
  const results: NodeResult[] = [];
  const bundles: NodeBundle[] = [];
  const skipped: string[] = [];
  for (const { nodeId, heldKey } of request.nodes) {
    // Skipped only if this worker still holds the very result the caller holds, and its inputs are unchanged.
    const heldHere =
      heldKey !== undefined && engine.result(nodeId)?.inputsKey === heldKey ? heldKey : undefined;
    const generated = engine.computeUnless(nodeId, heldHere, {
      materialise: request.materialise,
      ...(request.generatedAt === undefined ? {} : { generatedAt: request.generatedAt }),
    });
    if (!generated) {
      skipped.push(nodeId);
      continue;
    }
    const { result, bundle } = generated;
    if (request.keep) engine.commit([result]);
    results.push({ ...result, inputsKey: init.keyPrefix + result.inputsKey });
    if (request.materialise) {
      if (!bundle) throw new Error(`node ${nodeId}: materialised without a bundle`);
      bundles.push(bundle);
    }
  }
  if (!request.memberships) return { results, bundles, skipped };
  const codec = membershipCodec(engine.compiled.groups.keys(), engine.compiled.rules.keys());
  const memberships = encodeMemberships(
    codec,
    results.map(({ nodeId }) => {
      const known = engine.membershipsOf(nodeId);
      if (!known) throw new Error(`node ${nodeId}: no memberships`);
      return known;
    }),
  );
  return { results, bundles, skipped, memberships };
}

port.on('message', (request: WorkerRequest) => {
  try {
    const output = handle(request);
    if (!output) reply({ kind: 'done', id: request.id });
    else port?.postMessage({ kind: 'done', id: request.id, output } satisfies WorkerReply, transfers(output));
  } catch (error) {
    const fault =
      error instanceof Error
        ? { message: error.message, ...(error.stack === undefined ? {} : { stack: error.stack }) }
        : { message: String(error) };
    reply({ kind: 'failed', id: request.id, fault });
  }
});

reply({ kind: 'ready', protocol: PROTOCOL_VERSION, revision: engine.revision });
