import fc from 'fast-check';
import type { ChangeSetArbitraryOptions, Mutation, MutationKind } from '../../testing/change-set-arbitrary';
import {
  arbitraryMutations,
  interpretChangeSet,
  MALFORMED_VARIANTS,
  MUTATION_KINDS,
} from '../../testing/change-set-arbitrary';
import type { ArbitraryFleetFile } from '../../testing/fleet-arbitrary';
import { arbitraryFleet } from '../../testing/fleet-arbitrary';
import { generateNode } from '../generate/generate';
import { compileFleet } from '../index/fleet-index';
import { relationshipKey } from '../index/change-set';
import type { BundleEntry, GenerateOptions, NodeBundle } from '../generate/types';
import type { Fleet } from '../model/fleet';
import { ORDERING_MODES } from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson } from '../model/json';
import { compareCodeUnits } from '../text/compare';
import { validateFleet } from '../validation/validate';
import type { EngineOptions } from './engine';
import { GenerationEngine } from './engine';

/**
 * The invariant of incremental generation (semantics.md §7), over random fleets and random
 * sequences of change sets (testing/change-set-arbitrary.ts): after each regeneration, every node's
 * result equals a full generation from scratch at the same revision, and every node whose result
 * changed was among the nodes the change sets said they affected. Along the way: a change set is
 * accepted exactly when the configuration it gives is valid (fleet-format.md), and a rejected one
 * leaves the engine as it was.
 */

interface Step {
  readonly mutations: Mutation[];
  /** Regenerate after this change set; otherwise it is coalesced with the next ones. */
  readonly regenerate: boolean;
  /** Regenerate handing out the whole bundle of each changed node, as the CLI writes them. */
  readonly materialise: boolean;
  /**
   * Materialise as the generator-service does: files whose digests a cache holds (those handed out
   * before, less some the cache lost) come without content.
   */
  readonly stored: boolean;
}

interface Stats {
  changeSets: number;
  accepted: number;
  rejected: number;
  acceptedKinds: Map<MutationKind, number>;
  rejectedKinds: Map<MutationKind, number>;
  regenerations: number;
  recomputed: number;
  /** Recomputed nodes whose result came out as before: what the affected sets over-approximate. */
  recomputedUnchanged: number;
  changed: number;
}

function newStats(): Stats {
  return {
    changeSets: 0,
    accepted: 0,
    rejected: 0,
    acceptedKinds: new Map(),
    rejectedKinds: new Map(),
    regenerations: 0,
    recomputed: 0,
    recomputedUnchanged: 0,
    changed: 0,
  };
}

const anyFleet: fc.Arbitrary<ArbitraryFleetFile> = fc.oneof(
  arbitraryFleet(),
  arbitraryFleet({ relationships: 'acyclic' }),
  arbitraryFleet({ relationships: 'any' }),
);

/**
 * Sometimes an ordering forced on every node (as `generate --ordering` does), sometimes caches so
 * small that entries are evicted and rebuilt between and within regenerations.
 */
const engineOptions: fc.Arbitrary<EngineOptions> = fc.record(
  {
    ordering: fc.constantFrom(...ORDERING_MODES),
    limits: fc.record({
      plans: fc.integer({ min: 1, max: 3 }),
      levels: fc.integer({ min: 1, max: 3 }),
      renderedBytes: fc.constantFrom(1, 2_000, 20_000),
    }),
  },
  { requiredKeys: [] },
);

function steps(options: ChangeSetArbitraryOptions = {}): fc.Arbitrary<Step[]> {
  const step = fc.record({
    mutations: arbitraryMutations(options),
    regenerate: fc.boolean(),
    materialise: fc.boolean(),
    stored: fc.boolean(),
  });
  return fc.array(step, {
    minLength: 1,
    maxLength: 8,
  });
}

/** A fleet as text that ignores the order of collections (and repeated relationships). */
function canonicalFleet(fleet: Fleet): string {
  const plain = JSON.parse(JSON.stringify(fleet)) as Fleet;
  const byKey = <T>(list: readonly T[], key: (entity: T) => string): T[] =>
    [...new Map(list.map((entity) => [key(entity), entity] as const))]
      .sort(([a], [b]) => compareCodeUnits(a, b))
      .map(([, entity]) => entity);
  const byId = <T extends { id: string }>(list: readonly T[]): T[] => byKey(list, (entity) => entity.id);
  return canonicalJson({
    ...plain,
    techniques: byKey(plain.techniques, (technique) => `${technique.id}@${technique.version}`),
    directives: byId(plain.directives),
    relationships: byKey(plain.relationships, relationshipKey),
    rules: byId(plain.rules),
    groups: byId(plain.groups),
    nodes: byId(plain.nodes),
    relays: byId(plain.relays),
  } as unknown as Json);
}

/** What a node's result is compared on. */
function resultKey(result: { status: string; hash: string | null; errors: readonly unknown[] }): string {
  return JSON.stringify([result.status, result.hash, result.errors]);
}

const count = (map: Map<MutationKind, number>, kinds: readonly MutationKind[]): void => {
  for (const kind of new Set(kinds)) map.set(kind, (map.get(kind) ?? 0) + 1);
};

/**
 * Every node of the configuration the engine holds, generated the reference way (nothing cached):
 * the engine must hold exactly these nodes, with the same hash, status and errors.
 */
function expectFullGeneration(
  engine: GenerationEngine,
  options: EngineOptions,
  fail: (message: string) => never,
): Map<string, string> {
  const compiled = compileFleet(engine.toFleet());
  if (engine.pendingNodes().length > 0)
    fail(`nodes still pending after regenerate: ${engine.pendingNodes().join()}`);
  const held = [...engine.allResults().keys()].sort(compareCodeUnits);
  if (held.join('\n') !== compiled.nodeIds.join('\n'))
    fail(`the engine holds nodes [${held.join()}], the fleet has [${compiled.nodeIds.join()}]`);
  const keys = new Map<string, string>();
  for (const nodeId of compiled.nodeIds) {
    const reference = resultKey(generateNode(compiled, nodeId, generateOptions(engine, options)));
    const result = engine.result(nodeId);
    const incremental = result ? resultKey(result) : 'none';
    if (incremental !== reference)
      fail(
        `node ${nodeId} at revision ${engine.revision}:\nincremental ${incremental}\nfull        ${reference}`,
      );
    keys.set(nodeId, reference);
  }
  return keys;
}

const GENERATED_AT = 1_700_000_000_000;

/** The options of the reference generation matching the engine's. */
function generateOptions(engine: GenerationEngine, options: EngineOptions): GenerateOptions {
  return { revision: engine.revision, ...(options.ordering ? { ordering: options.ordering } : {}) };
}

function runScenario(
  file: ArbitraryFleetFile,
  options: EngineOptions,
  scenario: readonly Step[],
  stats: Stats,
): void {
  const initial = validateFleet(file);
  if (!initial.ok)
    throw new Error(`the fleet arbitrary gave an invalid fleet: ${JSON.stringify(initial.issues)}`);
  const engine = GenerationEngine.fromFleet(initial.fleet, options);
  const log: string[] = [];
  const fail = (message: string): never => {
    throw new Error(`${message}\nchange sets applied (ok?, change set):\n${log.join('\n')}`);
  };

  engine.regenerate();
  let reference = expectFullGeneration(engine, options, fail);
  let affectedSince = new Set<string>();
  // The digests a cache would hold: every file handed out with its content so far.
  const cached = new Set<string>();
  // A cache that lost about a third of them: their files must come with content again.
  const stored = (sha256: string): boolean => cached.has(sha256) && sha256.charCodeAt(0) % 3 !== 0;

  scenario.forEach((step, index) => {
    const fleet = engine.toFleet();
    const before = {
      revision: engine.revision,
      fleet: canonicalFleet(fleet),
      pending: engine.pendingNodes(),
    };
    const { changeSet, resulting, wellFormed, effective } = interpretChangeSet(fleet, step.mutations);
    const outcome = engine.apply(JSON.parse(JSON.stringify(changeSet)));
    log.push(`${outcome.ok ? 'accepted' : 'rejected'} ${JSON.stringify(changeSet)}`);
    stats.changeSets++;

    // Accepted exactly when the configuration it gives is valid as a whole.
    const expected = validateFleet(resulting);
    if (outcome.ok !== (wellFormed && expected.ok)) {
      const issues = (result: {
        ok: boolean;
        issues?: readonly { path: string; message: string }[];
      }): string => (result.ok ? 'none' : JSON.stringify(result.issues));
      fail(
        `change set ${outcome.ok ? 'accepted' : 'rejected'}, but the configuration it gives is ` +
          `${expected.ok ? 'valid' : 'invalid'}${wellFormed ? '' : ' (the change set is malformed)'}\n` +
          `change set issues: ${issues(outcome)}\nfleet issues: ${issues(expected)}`,
      );
    }

    if (!outcome.ok) {
      stats.rejected++;
      count(stats.rejectedKinds, effective);
      // Rejected whole: nothing moved, and the report says where.
      if (outcome.revision !== before.revision || engine.revision !== before.revision)
        fail(`a rejected change set moved the revision from ${before.revision} to ${engine.revision}`);
      if (canonicalFleet(engine.toFleet()) !== before.fleet)
        fail('a rejected change set changed the configuration');
      if (engine.pendingNodes().join() !== before.pending.join())
        fail(`a rejected change set marked nodes pending: ${engine.pendingNodes().join()}`);
      if (outcome.issues.length === 0) fail('a change set was rejected without an issue');
      for (const issue of outcome.issues)
        if (!issue.path.startsWith('$.') || issue.message === '')
          fail(`malformed issue ${JSON.stringify(issue)}`);
    } else {
      stats.accepted++;
      count(stats.acceptedKinds, effective);
      if (outcome.revision !== before.revision + 1 || engine.revision !== before.revision + 1)
        fail(`an accepted change set moved the revision from ${before.revision} to ${engine.revision}`);
      // The configuration is the one the change set describes (fleet-format.md, "Change sets").
      if (expected.ok && canonicalFleet(engine.toFleet()) !== canonicalFleet(expected.fleet))
        fail(
          `the engine's configuration differs from the one the change set gives:\nengine   ${canonicalFleet(
            engine.toFleet(),
          )}\nexpected ${canonicalFleet(expected.fleet)}`,
        );
      for (const nodeId of outcome.affected) affectedSince.add(nodeId);
    }

    if (!step.regenerate && index < scenario.length - 1) return;
    const emitted = new Map<string, NodeBundle<BundleEntry>>();
    const run =
      step.materialise && step.stored
        ? regenerateWithStored(engine, stored, (bundle) => emitted.set(bundle.nodeId, bundle))
        : step.materialise
          ? engine.regenerate({
              generatedAt: GENERATED_AT,
              onBundle: (bundle) => emitted.set(bundle.nodeId, bundle),
            })
          : engine.regenerate();
    stats.regenerations++;
    stats.recomputed += run.recomputed;
    stats.recomputedUnchanged += run.recomputed - run.changed.length;
    stats.changed += run.changed.length;
    for (const nodeId of run.changed)
      if (!affectedSince.has(nodeId)) fail(`node ${nodeId} changed but no change set said it was affected`);

    const current = expectFullGeneration(engine, options, fail);
    if (step.materialise) {
      // What is handed out is the bundle of a full generation, for exactly the changed nodes.
      if ([...emitted.keys()].join() !== run.changed.join())
        fail(`bundles handed out for [${[...emitted.keys()].join()}], changed [${run.changed.join()}]`);
      const compiled = compileFleet(engine.toFleet());
      for (const [nodeId, bundle] of emitted) {
        const full = generateNode(compiled, nodeId, {
          ...generateOptions(engine, options),
          generatedAt: GENERATED_AT,
        });
        if (step.stored) expectSameBundleBut(bundle, full, stored, fail);
        else if (JSON.stringify(bundle) !== JSON.stringify(full)) expect(bundle).toEqual(full);
        for (const file of bundle.files) if (file.content !== undefined) cached.add(file.sha256);
      }
    }
    // Against the reference too: every node whose result moved was affected (new nodes included).
    for (const [nodeId, key] of current)
      if (reference.get(nodeId) !== key && !affectedSince.has(nodeId))
        fail(`node ${nodeId}'s full generation changed, but no change set said it was affected`);
    const removed = [...reference.keys()].filter((nodeId) => !current.has(nodeId)).sort(compareCodeUnits);
    if (run.removed.join() !== removed.join())
      fail(`removed [${run.removed.join()}], expected [${removed.join()}]`);
    reference = current;
    affectedSince = new Set();
  });

  // Whole bundles, manifests and file contents included.
  const compiled = compileFleet(engine.toFleet());
  for (const nodeId of compiled.nodeIds) {
    const full = generateNode(compiled, nodeId, generateOptions(engine, options));
    const incremental = engine.bundle(nodeId);
    if (JSON.stringify(incremental) !== JSON.stringify(full)) expect(incremental).toEqual(full);
  }
}

/** `engine.regenerate` with its bundles materialised as the generator-service does (`stored`). */
function regenerateWithStored(
  engine: GenerationEngine,
  stored: (sha256: string) => boolean,
  onBundle: (bundle: NodeBundle<BundleEntry>) => void,
): { recomputed: number; changed: string[]; removed: string[] } {
  const candidates = engine.pendingNodes();
  const changed: string[] = [];
  let skipped = 0;
  for (const nodeId of candidates) {
    const outcome = engine.regenerateNode(nodeId, { materialise: true, generatedAt: GENERATED_AT, stored });
    if (outcome.skipped) skipped++;
    else if (outcome.changed) {
      changed.push(nodeId);
      if (outcome.bundle) onBundle(outcome.bundle);
    }
  }
  return { recomputed: candidates.length - skipped, changed, removed: engine.takeRemoved() };
}

/**
 * A bundle materialised with `stored` is the full one but for contents left out: the same files
 * (paths, digests, sizes) and manifest; each content given is the file's; each left out is one
 * the cache holds.
 */
function expectSameBundleBut(
  bundle: NodeBundle<BundleEntry>,
  full: NodeBundle,
  stored: (sha256: string) => boolean,
  fail: (message: string) => never,
): void {
  const digests = (files: readonly BundleEntry[]): string =>
    JSON.stringify(files.map(({ path, sha256, bytes }) => [path, sha256, bytes]));
  if (digests(bundle.files) !== digests(full.files))
    fail(`${bundle.nodeId}: files ${digests(bundle.files)}, expected ${digests(full.files)}`);
  bundle.files.forEach((file, index) => {
    const expected = full.files[index] as BundleEntry;
    if (file.content === undefined) {
      if (!stored(file.sha256)) fail(`${bundle.nodeId}: ${file.path} left out, but the cache lacks it`);
    } else if (file.content !== expected.content) fail(`${bundle.nodeId}: ${file.path} differs`);
  });
  const rest = ({ files: _files, ...others }: NodeBundle<BundleEntry>): string => JSON.stringify(others);
  if (rest(bundle) !== rest(full)) expect(rest(bundle)).toEqual(rest(full));
}

describe('incremental generation (semantics.md §7)', () => {
  it('holds, after any sequence of change sets, the results of a full generation at the same revision', () => {
    const stats = newStats();
    fc.assert(
      fc.property(anyFleet, engineOptions, steps(), (file, options, scenario) =>
        runScenario(file, options, scenario, stats),
      ),
      { numRuns: 400 },
    );

    // Not vacuous: most change sets are accepted, and every kind of change was.
    expect(stats.accepted / stats.changeSets).toBeGreaterThan(0.7);
    const neverAccepted = MUTATION_KINDS.filter(
      (kind) => kind !== 'malformed' && !stats.acceptedKinds.has(kind),
    );
    expect(neverAccepted).toEqual([]);
    expect(stats.changed).toBeGreaterThan(stats.regenerations / 3);
  });

  it('rejects a change set whole, leaving the engine as it was, exactly when it is wrong', () => {
    const stats = newStats();
    fc.assert(
      fc.property(anyFleet, engineOptions, steps({ malformedWeight: 15 }), (file, options, scenario) =>
        runScenario(file, options, scenario, stats),
      ),
      { numRuns: 100 },
    );
    expect(stats.rejected).toBeGreaterThan(60);
    expect(stats.accepted).toBeGreaterThan(60);
    expect(stats.rejectedKinds.get('malformed') ?? 0).toBeGreaterThan(MALFORMED_VARIANTS.length);
  });
});
