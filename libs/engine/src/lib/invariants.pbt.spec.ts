import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { ArbitraryFleetFile } from '../testing/fleet-arbitrary';
import { arbitraryFleet, RULE_NAMES, seededRandom, shuffleSetLikeArrays } from '../testing/fleet-arbitrary';
import type { CompiledFleet } from './index/fleet-index';
import { compileFleet } from './index/fleet-index';
import type { NodeComputation } from './generate/compute-node';
import { computeNode } from './generate/compute-node';
import type { ManifestParts } from './generate/generate';
import { bundleOf, MANIFEST_FILE, generateNode, manifestFromParts, manifestParts } from './generate/generate';
import type { GenerateOptions, NodeBundle, PolicyManifest } from './generate/types';
import type { FormedPolicy } from './merge/policies';
import type { PolicyEdge } from './ordering/order';
import { validateFleet } from './validation/validate';
import { ORDERING_MODES } from './model/fleet';

/**
 * Property-based invariants of generation over random valid fleets (testing/fleet-arbitrary.ts):
 * ordering (semantics.md §3), independence from the order of sets, cycle reports, manifests.
 */

const OPTIONS: GenerateOptions = { generatedAt: 1_700_000_000_000, revision: 42 };
const RUNS = 200;

interface GeneratedNode {
  readonly computation: NodeComputation;
  readonly bundle: NodeBundle;
}

function compileValid(file: ArbitraryFleetFile): CompiledFleet {
  const result = validateFleet(file);
  if (!result.ok) {
    throw new Error(
      `the arbitrary produced an invalid fleet:\n${result.issues.map((i) => `${i.path}: ${i.message}`).join('\n')}`,
    );
  }
  return compileFleet(result.fleet);
}

function generateAll(
  file: ArbitraryFleetFile,
  options: GenerateOptions = OPTIONS,
): Map<string, GeneratedNode> {
  const compiled = compileValid(file);
  const nodes = new Map<string, GeneratedNode>();
  for (const nodeId of compiled.nodeIds) {
    const computation = computeNode(compiled, nodeId, options);
    nodes.set(nodeId, {
      computation,
      bundle: bundleOf(computation, options, compiled.settings.maxBundleBytes),
    });
  }
  return nodes;
}

/** Kahn's algorithm, written plainly: at each step, the smallest policy whose predecessors are placed. */
function smallestTopologicalOrder(
  policies: readonly FormedPolicy[],
  edges: readonly PolicyEdge[],
  compare: (a: FormedPolicy, b: FormedPolicy) => number,
): string[] | undefined {
  const predecessors = new Map(policies.map((policy) => [policy.id, new Set<string>()]));
  for (const edge of edges) predecessors.get(edge.to)?.add(edge.from);
  const placed = new Set<string>();
  const order: string[] = [];
  while (order.length < policies.length) {
    const ready = policies.filter(
      (policy) =>
        !placed.has(policy.id) && [...(predecessors.get(policy.id) ?? [])].every((id) => placed.has(id)),
    );
    if (ready.length === 0) return undefined;
    const best = ready.reduce((a, b) => (compare(a, b) <= 0 ? a : b));
    placed.add(best.id);
    order.push(best.id);
  }
  return order;
}

/** Vertices reachable from `start` by one edge or more. */
function reachableFrom(start: string, successors: ReadonlyMap<string, readonly string[]>): Set<string> {
  const seen = new Set<string>();
  const stack = [...(successors.get(start) ?? [])];
  while (stack.length > 0) {
    const vertex = stack.pop() as string;
    if (seen.has(vertex)) continue;
    seen.add(vertex);
    stack.push(...(successors.get(vertex) ?? []));
  }
  return seen;
}

function successorMap(vertices: readonly string[], edges: readonly PolicyEdge[]): Map<string, string[]> {
  const successors = new Map<string, string[]>(vertices.map((vertex) => [vertex, []]));
  for (const edge of edges) successors.get(edge.from)?.push(edge.to);
  return successors;
}

/** Independent cycle check: a depth-first search that meets a vertex still on its stack. */
function hasDirectedCycle(vertices: readonly string[], edges: readonly PolicyEdge[]): boolean {
  const successors = successorMap(vertices, edges);
  const state = new Map<string, 'open' | 'done'>();
  const visit = (vertex: string): boolean => {
    state.set(vertex, 'open');
    for (const next of successors.get(vertex) ?? []) {
      if (state.get(next) === 'open') return true;
      if (!state.has(next) && visit(next)) return true;
    }
    state.set(vertex, 'done');
    return false;
  };
  return vertices.some((vertex) => !state.has(vertex) && visit(vertex));
}

/** The strongly connected components with more than one vertex, by mutual reachability. */
function cyclicComponents(vertices: readonly string[], edges: readonly PolicyEdge[]): string[][] {
  const successors = successorMap(vertices, edges);
  const reach = new Map(vertices.map((vertex) => [vertex, reachableFrom(vertex, successors)]));
  const assigned = new Set<string>();
  const components: string[][] = [];
  for (const vertex of vertices) {
    if (assigned.has(vertex) || !reach.get(vertex)?.has(vertex)) continue;
    const component = vertices.filter(
      (other) => other === vertex || (reach.get(vertex)?.has(other) && reach.get(other)?.has(vertex)),
    );
    component.forEach((member) => assigned.add(member));
    components.push(component);
  }
  return components;
}

/** Length (in edges) of a shortest cycle through `start`. */
function shortestCycleLength(start: string, successors: ReadonlyMap<string, readonly string[]>): number {
  const distance = new Map<string, number>([[start, 0]]);
  const queue = [start];
  while (queue.length > 0) {
    const vertex = queue.shift() as string;
    for (const next of successors.get(vertex) ?? []) {
      if (next === start) return (distance.get(vertex) as number) + 1;
      if (!distance.has(next)) {
        distance.set(next, (distance.get(vertex) as number) + 1);
        queue.push(next);
      }
    }
  }
  return Infinity;
}

function describeNode(file: ArbitraryFleetFile, nodeId: string, computation: NodeComputation): string {
  return [
    `node ${nodeId}: status ${computation.status}`,
    `policies: ${computation.policies.map((policy) => policy.id).join(', ')}`,
    `edges: ${computation.edges.map((edge) => `${edge.from} -> ${edge.to} (${edge.kind})`).join(', ')}`,
    `errors: ${JSON.stringify(computation.errors)}`,
    `fleet: ${JSON.stringify(file)}`,
  ].join('\n');
}

/**
 * The fleet plus one rule applying every directive to every node: most relationships then find
 * both their ends, so nodes stay ok while having edges.
 */
function saturated(mode: 'acyclic' | 'any'): fc.Arbitrary<ArbitraryFleetFile> {
  return fc
    .tuple(arbitraryFleet({ relationships: mode }), fc.constantFrom(...RULE_NAMES))
    .map(([file, name]) => ({
      ...file,
      rules: [
        ...file.rules,
        { id: 'r-every', name, directives: file.directives.map((d) => d.id), targets: ['special:all'] },
      ],
    }));
}

const relatedFleets = fc.oneof(
  arbitraryFleet({ relationships: 'acyclic' }),
  arbitraryFleet({ relationships: 'any' }),
  saturated('acyclic'),
  saturated('any'),
);

describe('generation invariants (property-based)', () => {
  it('orders every ok node by the smallest topological order of its relationship graph', () => {
    const seen = { okNodes: 0, withEdges: 0, reordered: 0 };
    fc.assert(
      fc.property(fc.oneof(relatedFleets, saturated('acyclic')), (file) => {
        for (const [nodeId, { computation, bundle }] of generateAll(file)) {
          if (bundle.status !== 'ok') continue;
          const context = (): string => describeNode(file, nodeId, computation);
          seen.okNodes++;
          const manifest = bundle.manifest as PolicyManifest;
          const order = manifest.policies.map((policy) => policy.id);
          expect(computation.policies.map((policy) => policy.id)).toEqual(order);
          expect(new Set(order).size).toBe(order.length);

          // The comparator is a strict total order on the node's policies.
          for (const a of computation.policies)
            for (const b of computation.policies) {
              const ab = Math.sign(computation.compare(a, b));
              const ba = Math.sign(computation.compare(b, a));
              if (ab !== -ba || (a !== b && ab === 0))
                throw new Error(
                  `compare(${a.id}, ${b.id}) = ${ab}, compare(${b.id}, ${a.id}) = ${ba}\n${context()}`,
                );
            }

          // A topological order: every edge goes forward.
          const position = new Map(order.map((id, index) => [id, index]));
          for (const edge of computation.edges) {
            const from = position.get(edge.from);
            const to = position.get(edge.to);
            if (from === undefined || to === undefined || from >= to)
              throw new Error(`edge ${edge.from} -> ${edge.to} not respected\n${context()}`);
          }

          // The smallest one: at each position nothing smaller was ready.
          const predecessors = new Map(order.map((id) => [id, new Set<string>()]));
          for (const edge of computation.edges) predecessors.get(edge.to)?.add(edge.from);
          computation.policies.forEach((policy, index) => {
            const placed = new Set(order.slice(0, index));
            for (const other of computation.policies.slice(index + 1)) {
              const ready = [...(predecessors.get(other.id) ?? [])].every((id) => placed.has(id));
              if (ready && computation.compare(other, policy) < 0)
                throw new Error(`${other.id} was ready and smaller than ${policy.id}\n${context()}`);
            }
          });

          // The same as a plain recomputation.
          expect(
            smallestTopologicalOrder(computation.policies, computation.edges, computation.compare),
          ).toEqual(order);

          if (computation.edges.length > 0) seen.withEdges++;
          const unconstrained = [...computation.policies]
            .sort(computation.compare)
            .map((policy) => policy.id);
          if (unconstrained.join() !== order.join()) seen.reordered++;
        }
      }),
      { numRuns: RUNS },
    );
    // The property was not vacuous.
    expect(seen.okNodes).toBeGreaterThan(50);
    expect(seen.withEdges).toBeGreaterThan(5);
    expect(seen.reordered).toBeGreaterThan(0);
  });

  it('gives byte-identical bundles whatever the order of set-like arrays', () => {
    let compared = 0;
    fc.assert(
      fc.property(relatedFleets, fc.integer(), (file, seed) => {
        const shuffledFile = shuffleSetLikeArrays(file, seededRandom(seed));
        const original = generateAll(file);
        const shuffled = generateAll(shuffledFile);
        expect([...shuffled.keys()]).toEqual([...original.keys()]);
        for (const [nodeId, { bundle }] of original) {
          const other = (shuffled.get(nodeId) as GeneratedNode).bundle;
          const where = `node ${nodeId}\noriginal: ${JSON.stringify(file)}\nshuffled: ${JSON.stringify(shuffledFile)}`;
          if (other.status !== bundle.status || other.hash !== bundle.hash)
            throw new Error(
              `status/hash differ: ${bundle.status} ${bundle.hash} vs ${other.status} ${other.hash}\n${where}`,
            );
          const files = (b: NodeBundle): [string, string][] => b.files.map((f) => [f.path, f.content]);
          expect(files(other)).toEqual(files(bundle));
          compared++;
        }
      }),
      { numRuns: RUNS },
    );
    expect(compared).toBeGreaterThan(100);
  });

  it('fails a node with DEPENDENCY_CYCLE exactly when its policy graph has a cycle, and names each one', () => {
    const seen = { cyclic: 0, severalCycles: 0, acyclic: 0 };
    fc.assert(
      fc.property(fc.oneof(arbitraryFleet({ relationships: 'any' }), saturated('any')), (file) => {
        for (const [nodeId, { computation }] of generateAll(file)) {
          const context = (): string => describeNode(file, nodeId, computation);
          const vertices = computation.policies.map((policy) => policy.id);
          const cyclic = hasDirectedCycle(vertices, computation.edges);
          const errors = computation.errors.filter((error) => error.code === 'DEPENDENCY_CYCLE');
          if (errors.length !== (cyclic ? 1 : 0))
            throw new Error(`cycle: ${cyclic}, DEPENDENCY_CYCLE errors: ${errors.length}\n${context()}`);
          if (!cyclic) {
            seen.acyclic++;
            continue;
          }
          seen.cyclic++;
          expect(computation.status).toBe('failed');

          const components = cyclicComponents(vertices, computation.edges);
          const [first, ...lines] = (errors[0]?.message ?? '').split('\n');
          const n = components.length;
          if (n > 1) seen.severalCycles++;
          expect(first).toBe(`Found ${n} dependency ${n === 1 ? 'cycle' : 'cycles'}:`);
          expect(lines).toHaveLength(n);

          const policyOfPositionDirective = new Map(
            computation.policies.map((policy) => [policy.positionDraft.directive.id, policy.id]),
          );
          const successors = successorMap(vertices, computation.edges);
          const componentsMet = new Set<number>();
          for (const line of lines) {
            const match = /^\((.*)\)$/.exec(line);
            if (!match) throw new Error(`not a cycle line: ${line}\n${context()}`);
            const entries = (match[1] as string).split(' => ');
            for (const entry of entries) expect(entry).toMatch(/^Directive\[[^\]]+\]$/);
            expect(entries.length).toBeGreaterThanOrEqual(3);
            expect(entries[entries.length - 1]).toBe(entries[0]);
            const path = entries.map((entry) => {
              const policyId = policyOfPositionDirective.get(entry.slice('Directive['.length, -1));
              if (policyId === undefined) throw new Error(`${entry} holds no policy\n${context()}`);
              return policyId;
            });
            // A closed walk along edges, through distinct policies, and a shortest one.
            for (let index = 0; index + 1 < path.length; index++) {
              const from = path[index] as string;
              const to = path[index + 1] as string;
              if (!computation.edges.some((edge) => edge.from === from && edge.to === to))
                throw new Error(`${line}: no edge ${from} -> ${to}\n${context()}`);
            }
            expect(new Set(path.slice(0, -1)).size).toBe(path.length - 1);
            expect(path.length - 1).toBe(shortestCycleLength(path[0] as string, successors));
            // One line per cyclic component.
            const component = components.findIndex((members) => members.includes(path[0] as string));
            expect(component).toBeGreaterThanOrEqual(0);
            expect(componentsMet.has(component)).toBe(false);
            componentsMet.add(component);
          }
        }
      }),
      { numRuns: RUNS },
    );
    expect(seen.cyclic).toBeGreaterThan(5);
    expect(seen.acyclic).toBeGreaterThan(50);
  });

  it('never reports a cycle when the declared relationships agree with one order', () => {
    let nodes = 0;
    fc.assert(
      fc.property(fc.oneof(arbitraryFleet({ relationships: 'acyclic' }), saturated('acyclic')), (file) => {
        for (const [nodeId, { computation }] of generateAll(file)) {
          const vertices = computation.policies.map((policy) => policy.id);
          if (
            hasDirectedCycle(vertices, computation.edges) ||
            computation.errors.some((error) => error.code === 'DEPENDENCY_CYCLE')
          )
            throw new Error(`unexpected cycle\n${describeNode(file, nodeId, computation)}`);
          nodes++;
        }
      }),
      { numRuns: RUNS },
    );
    expect(nodes).toBeGreaterThan(RUNS);
  });

  it('puts a manifest together from its parts as JSON.stringify writes it, whatever its values', () => {
    const text = fc.string({ unit: 'binary' });
    const digest = fc.stringMatching(/^[0-9a-f]{64}$/);
    const manifest = fc.record({
      schemaVersion: fc.constant(1 as const),
      nodeId: text,
      configRevision: fc.nat(),
      status: fc.constantFrom('ok' as const, 'failed' as const),
      errors: fc.array(fc.record({ code: fc.constant('MISSING_PARAMETER' as const), message: text })),
      ordering: fc.constantFrom(...ORDERING_MODES),
      policies: fc.array(fc.jsonValue()) as unknown as fc.Arbitrary<PolicyManifest['policies']>,
      properties: fc.dictionary(text, fc.jsonValue()) as fc.Arbitrary<PolicyManifest['properties']>,
      files: fc.array(fc.record({ path: text, sha256: digest })),
      hash: fc.option(digest.map((hex) => `sha256:${hex}`)),
    });
    fc.assert(
      fc.property(manifest, (value) => {
        expect(manifestFromParts(value, manifestParts(value))).toBe(`${JSON.stringify(value)}\n`);
      }),
      { numRuns: 500 },
    );
  });

  it('writes a policy-manifest.json that parses and matches its bundle', () => {
    const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
    fc.assert(
      fc.property(relatedFleets, (file) => {
        const compiled = compileValid(file);
        for (const nodeId of compiled.nodeIds) {
          const bundle = generateNode(compiled, nodeId, OPTIONS);
          const ignored = bundle.status === 'ignored';
          const failed = bundle.status === 'failed';
          // An ignored node gets nothing, not even a manifest.
          expect(bundle.manifest === null).toBe(ignored);
          expect(bundle.files.length === 0).toBe(ignored);
          if (ignored) continue;

          const manifestFiles = bundle.files.filter((f) => f.path === MANIFEST_FILE);
          expect(manifestFiles).toHaveLength(1);
          const content = (manifestFiles[0] as { content: string }).content;
          const parsed = JSON.parse(content) as PolicyManifest;
          expect(parsed).toEqual(bundle.manifest);
          // Put together member by member (manifestFromParts), it is JSON.stringify's text exactly.
          expect(content).toBe(`${JSON.stringify(bundle.manifest)}\n`);
          expect(manifestFromParts(parsed, bundle.manifestParts as ManifestParts)).toBe(content);
          expect(parsed.schemaVersion).toBe(1);
          expect(parsed.nodeId).toBe(nodeId);
          expect(parsed.status).toBe(bundle.status);
          expect(parsed.configRevision).toBe(OPTIONS.revision);
          expect(parsed.hash).toBe(bundle.hash);
          expect(parsed.errors).toEqual(JSON.parse(JSON.stringify(bundle.errors)));
          expect(parsed.files).toEqual(
            bundle.files
              .filter((f) => f.path !== MANIFEST_FILE)
              .map((f) => ({ path: f.path, sha256: f.sha256 })),
          );
          for (const f of bundle.files) expect(f.sha256).toBe(sha256(f.content));
          expect(parsed.policies.map((policy) => policy.id)).toEqual(
            computeNode(compiled, nodeId, OPTIONS).policies.map((policy) => policy.id),
          );
          // ok: a hash over the tree; failed: no tree, no hash, and a reason.
          expect(bundle.hash ?? `sha256:${'0'.repeat(64)}`).toMatch(/^sha256:[0-9a-f]{64}$/);
          expect(bundle.hash === null).toBe(failed);
          expect(bundle.files.length === 1).toBe(failed);
          expect(parsed.errors.length > 0).toBe(failed);
        }
      }),
      { numRuns: RUNS },
    );
  });
});
