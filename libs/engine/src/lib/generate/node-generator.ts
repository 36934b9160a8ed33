import { LRUCache } from 'lru-cache';
import type { CompiledFleet, IndexDelta } from '../index/fleet-index';
import type { FormedPolicy } from '../merge/policies';
import { draftsOfRules, formPolicies, formTechniquePolicies } from '../merge/policies';
import type { Draft, TechniquePolicies } from '../merge/policies';
import type { Directive, FleetNode, Group, OrderingMode, PolicyMode, Technique } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import type { PolicyEdge } from '../ordering/order';
import { buildPolicyGraph, declaresRelations, orderingComparator, orderPolicies } from '../ordering/order';
import type { GroupLevels } from '../properties/inherit';
import type { ParsedReference } from '../properties/expand';
import { referencedValuesKey, referencesIn } from '../properties/expand';
import { groupLevels, levelGroups, mergeLayers, nodeProperties } from '../properties/inherit';
import type { PolicyContext, QuotedLayout, RenderInstance } from '../render/node-files';
import type { NodeModeBasis } from '../policy-mode/policy-mode';
import { directiveMode, nodeModeBasis } from '../policy-mode/policy-mode';
import {
  DIRECTIVES_CSV_FILE,
  directivesCsvLines,
  GENERATED_AT_FILE,
  policyContexts,
  contextKeyOf,
  NO_CONTEXT,
  policyLayout,
  PROMISES_FILE,
  PROPERTIES_FILE,
  quotedLayout,
  quotedPromisesCfOf,
  propertiesFileOf,
  renderPolicy,
  SYSTEM_BUNDLES_FILE,
  SYSTEM_LIBRARY_FILE,
} from '../render/node-files';
import { renderSystemBundles, SYSTEM_LIBRARY } from '../render/cfengine';
import { ORDERING_PROPERTY } from '../validation/validate';
import {
  dependsOnNode,
  expansionContext,
  missingParameters,
  orderingOf,
  resolveValues,
} from './compute-node';
import {
  assembleBundle,
  bundleSizeError,
  bundleFile,
  bundleHash,
  failedBundle,
  generationError,
  ignoredBundle,
  manifestPolicies,
} from './generate';
import type {
  BundleEntry,
  BundleFile,
  FileDigest,
  GenerateOptions,
  NodeBundle,
  NodeError,
  StoredDigests,
} from './types';
import { flatMapList, mapList } from '../model/lists';
import { countBoundedCache } from './count-bounded-cache';

/** A node's generation outcome without its file contents: what the engine keeps per node. */
export interface NodeResult {
  readonly nodeId: string;
  readonly status: 'ok' | 'failed' | 'ignored';
  readonly errors: readonly NodeError[];
  /** Null unless ok. */
  readonly hash: string | null;
  /** What the bundle was computed from (plan, property levels, node): equal keys give equal bundles. */
  readonly inputsKey: string;
  readonly policies: number;
}

export interface GeneratorLimits {
  /** Policy plans kept (one per distinct rule set and ordering mode in use). */
  readonly plans?: number;
  /** Property levels kept (one per distinct set of enabled groups in use). */
  readonly levels?: number;
  /** Bytes of rendered policy files kept for reuse. */
  readonly renderedBytes?: number;
}

/** Sized for a 100,000-node fleet whose nodes mostly have rule and group sets of their own. */
const DEFAULT_LIMITS: Required<GeneratorLimits> = {
  plans: 150_000,
  levels: 150_000,
  renderedBytes: 128 * 1024 * 1024,
};

interface PlannedPolicy {
  /** The policy as formed when the plan was built; its directives may since have new values. */
  readonly policy: FormedPolicy;
  readonly context: PolicyContext;
  readonly contextKey: string;
}

/** Everything a node's policies are that depends on its rules (and ordering mode) alone. */
interface NodePlan {
  readonly serial: number;
  readonly ruleIds: readonly string[];
  /** The epoch it was built at, and the last epoch it was found current at. */
  readonly builtAt: number;
  checkedAt: number;
  /** In apply order. */
  readonly policies: readonly PlannedPolicy[];
  /** Policies in formation order: the order per-node errors are reported in. */
  readonly formation: readonly PlannedPolicy[];
  /** The formation index of each policy, in apply order. */
  readonly applyOrder: readonly number[];
  readonly edges: readonly PolicyEdge[];
  readonly errorsBefore: readonly NodeError[];
  readonly errorsAfter: readonly NodeError[];
  /** Digests only: the contents are made again from the policies when a bundle is materialised. */
  readonly promises: FileDigest;
  readonly csv: FileDigest;
  /** The formation's policy values as of `epoch`: the same for every node of the plan. */
  values?: { readonly epoch: number; readonly entries: readonly PolicyValues[]; readonly key: string };
}

/**
 * A formed policy with its directives' current values. A change of parameter values only (same
 * names, priorities, techniques, relationships) leaves every plan as it is: the values are looked
 * up here, by the identity of the directives, and the policy is rendered again once, not per node.
 */
interface PolicyValues {
  readonly key: string;
  readonly policy: FormedPolicy;
  /** Some value holds a generation-time reference: expanded per node. */
  readonly dynamic: boolean;
  /** The generation-time references of the values, when dynamic: what an expansion reads. */
  readonly references: readonly ParsedReference[];
  /** Some value names the node itself: no other node can share the files. */
  readonly unique: boolean;
  readonly missing: readonly NodeError[];
  /** Some directive sets a policy mode of its own. */
  readonly ownModes: boolean;
  /** When not dynamic: the files, per render context (and policy modes, unless all enforce). */
  readonly files: Map<string, readonly BundleFile[]>;
  /** The generator's epoch `key` was last checked at: directives do not change within one. */
  checkedAt: number;
}

type PolicyShape = QuotedLayout & { readonly csv: string };

interface Levels {
  readonly serial: number;
  readonly levels: GroupLevels;
  /** The groups the levels were merged from (`levelGroups` order). */
  readonly groups: readonly Group[];
  /** The generator's parameter version the global parameters were merged at. */
  readonly parametersVersion: number;
  /** The epoch the groups' properties were merged at, and the last epoch they were found current at. */
  readonly builtAt: number;
  checkedAt: number;
}

/** Digests of a node's own files, kept with the node entity they were computed from. */
interface NodeDigests {
  readonly system: FileDigest;
  levelsSerial?: number;
  properties?: FileDigest;
  /** Expanded policies of the node, by policy values, context and property levels. */
  readonly dynamic: Map<PolicyValues, DynamicDigest>;
}

/** A node's properties file: its digest, and its text when it was rendered just now. */
interface OwnProperties {
  readonly digest: FileDigest;
  readonly content?: string;
}

interface DynamicDigest {
  readonly key: string;
  readonly files: readonly FileDigest[];
  readonly unknown: readonly NodeError[];
}

interface Prepared {
  readonly node: FleetNode;
  readonly inputsKey: string;
  readonly levels?: Levels;
  readonly plan?: NodePlan;
  readonly values?: readonly PolicyValues[];
  readonly properties?: JsonObject;
  readonly mode?: OrderingMode;
  readonly modeBasis?: NodeModeBasis;
}

const LIBRARY_FILE = bundleFile(SYSTEM_LIBRARY_FILE, SYSTEM_LIBRARY);

/** How a node is generated: its bundle materialised or not, and what the caller holds already. */
export type MaterialiseOptions = GenerateOptions & {
  readonly materialise?: boolean;
  readonly stored?: StoredDigests;
};
const MAX_DYNAMIC_PER_NODE = 64;
const LEVEL_KEY_SEPARATOR = '\u0000';
const IDENTITY_REFERENCE = /rudder\.node\.(id|hostname)/;

/**
 * Generates nodes through caches: a plan per distinct rule set (drafts, merge, order, promises.cf),
 * a technique's formed policies per distinct set of drafts, property levels per distinct group set,
 * policy files by their resolved inputs, and each node's own file digests. Equal to `generateNode`,
 * byte for byte (the property-based tests hold it to that).
 *
 * Memory is bounded: plans, technique policies and levels are LRUs by count, rendered dynamic
 * policies an LRU by bytes; what hangs off a policy or node object goes with it (weak maps). An
 * evicted entry is rebuilt on its next use; `invalidate` drops what a change made stale.
 */
export class NodeGenerator {
  private readonly plans: LRUCache<string, NodePlan>;
  /** Rule id → the epoch its policies last changed at: plans built before are stale. */
  private readonly ruleChangedAt = new Map<string, number>();
  private readonly levels: LRUCache<string, Levels>;
  /** Group id → the epoch its properties last changed at: levels merged before are stale. */
  private readonly groupChangedAt = new Map<string, number>();
  private readonly rendered: LRUCache<string, readonly BundleFile[]>;
  private readonly techniquePolicies: LRUCache<string, TechniquePolicies>;
  private readonly singleDraftPolicies = new WeakMap<Draft, TechniquePolicies>();
  private readonly policyValues = new WeakMap<FormedPolicy, PolicyValues>();
  private readonly nodeDigests = new WeakMap<FleetNode, NodeDigests>();
  private readonly serials = new WeakMap<object, number>();
  private readonly ruleDrafts = new Map<string, { checkedAt: number; drafts: readonly Draft[] }>();
  private nextSerial = 1;
  private parametersVersion = 0;
  /** Global parameter name → the parameter version it last changed at. */
  private readonly parameterChangedAt = new Map<string, number>();
  /** Moves on every `invalidate`: what was checked at the current epoch holds until the next change. */
  private epoch = 0;

  constructor(
    private readonly compiled: CompiledFleet,
    private readonly options: { readonly ordering?: OrderingMode; readonly limits?: GeneratorLimits } = {},
  ) {
    const limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.plans = countBoundedCache(limits.plans);
    this.levels = countBoundedCache(limits.levels);
    this.techniquePolicies = countBoundedCache(limits.plans * 4);
    this.rendered = new LRUCache({
      maxSize: limits.renderedBytes,
      sizeCalculation: (files) => files.reduce((total, file) => total + file.content.length + 100, 0),
    });
  }

  /** Drops what a change made stale: plans of changed rules, property levels, everything on settings. */
  invalidate(delta: IndexDelta): void {
    this.epoch++;
    if (delta.settingsChanged) {
      this.plans.clear();
      // The global parameters' inheritance modes are settings.
      this.levels.clear();
    }
    // Plans naming these rules are found stale when next used (`planOf`), not looked for now.
    for (const ruleId of delta.dirtyRules) this.ruleChangedAt.set(ruleId, this.epoch);
    if (delta.parametersChanged.size > 0) {
      // Levels are merged again lazily, for the changed parameters only (`levelsOf`).
      this.parametersVersion++;
      for (const name of delta.parametersChanged) this.parameterChangedAt.set(name, this.parametersVersion);
    }
    if (delta.propertyLayersChanged) {
      const changed = delta.propertyGroupsChanged;
      if (changed === 'all') this.levels.clear();
      // Levels naming these groups are found stale when next used (`levelsOf`), not looked for now.
      else for (const groupId of changed) this.groupChangedAt.set(groupId, this.epoch);
    }
  }

  /** What a node's bundle would be computed from now (see `NodeResult.inputsKey`). */
  inputsKey(nodeId: string): string {
    return this.prepare(this.nodeOf(nodeId)).inputsKey;
  }

  /** The node's result, and its whole bundle when `materialise` is set. */
  generate(
    nodeId: string,
    options: GenerateOptions & { readonly materialise?: boolean } = {},
  ): { result: NodeResult; bundle?: NodeBundle } {
    // Without `stored`, every file comes with its content.
    return this.generateUnless(nodeId, undefined, options) as { result: NodeResult; bundle?: NodeBundle };
  }

  /**
   * `generate`, unless the node's inputs key is `inputsKey`: then nothing is computed (undefined).
   * With `stored`, a materialised bundle's files whose digests the caller holds come without
   * content, and are not rendered again for it.
   */
  generateUnless(
    nodeId: string,
    inputsKey: string | undefined,
    options: MaterialiseOptions = {},
  ): { result: NodeResult; bundle?: NodeBundle<BundleEntry> } | undefined {
    const node = this.nodeOf(nodeId);
    let prepared: Prepared | undefined;
    try {
      prepared = this.prepare(node);
      if (prepared.inputsKey === inputsKey) return undefined;
      return this.generatePrepared(prepared, options);
    } catch (error) {
      // A defect must not stop the other nodes: this one fails, until its inputs change.
      const failure = generationError(error);
      const key = prepared?.inputsKey ?? `error:${this.serialOf(node)}:${this.epoch}`;
      const result: NodeResult = {
        nodeId,
        status: 'failed',
        errors: [failure],
        hash: null,
        inputsKey: key,
        policies: 0,
      };
      if (!options.materialise) return { result };
      return {
        result,
        bundle: failedBundle(nodeId, failure, this.compiled.settings.ordering, options),
      };
    }
  }

  /** Cache sizes, for the benchmark and metrics. */
  stats(): {
    plans: number;
    levels: number;
    techniquePolicies: number;
    renderedEntries: number;
    renderedBytes: number;
  } {
    return {
      plans: this.plans.size,
      levels: this.levels.size,
      techniquePolicies: this.techniquePolicies.size,
      renderedEntries: this.rendered.size,
      renderedBytes: this.rendered.calculatedSize,
    };
  }

  private nodeOf(nodeId: string): FleetNode {
    const node = this.compiled.nodes.get(nodeId);
    if (!node) throw new Error(`unknown node ${nodeId}`);
    return node;
  }

  /** Everything but the rendering: the key says whether the rest can be skipped. */
  private prepare(node: FleetNode): Prepared {
    const nodeSerial = this.serialOf(node);
    if (node.state === 'ignored') return { node, inputsKey: `ignored:${nodeSerial}` };
    const levels = this.levelsOf(node);
    const properties = nodeProperties(levels.levels, node);
    const mode = orderingOf(this.compiled, properties[ORDERING_PROPERTY], this.options).mode;
    const plan = this.planOf(
      node.state === 'empty-policies' ? [] : (this.compiled.rulesOfNode.get(node.id) ?? []),
      mode,
    );
    const { entries: values, key: valuesKey } = this.planValues(plan);
    return {
      node,
      inputsKey: `${plan.serial}:${levels.serial}:${nodeSerial}:${valuesKey}`,
      levels,
      plan,
      values,
      properties,
      mode,
      modeBasis: nodeModeBasis(this.compiled.settings, node),
    };
  }

  private generatePrepared(
    prepared: Prepared,
    options: MaterialiseOptions,
  ): { result: NodeResult; bundle?: NodeBundle<BundleEntry> } {
    const { node, inputsKey, levels, plan, values, properties, mode, modeBasis } = prepared;
    const nodeId = node.id;
    if (!levels || !plan || !values || !properties || !mode || !modeBasis) {
      const result = { nodeId, status: 'ignored', errors: [], hash: null, inputsKey, policies: 0 } as const;
      return options.materialise ? { result, bundle: ignoredBundle(nodeId) } : { result };
    }
    const materialise = options.materialise === true;
    const stored = options.stored;
    const context = expansionContext(this.compiled, node, properties);
    const own = this.digestsOf(node);
    const unknown: NodeError[] = [];
    // By formation index: the plan says which one each applied policy is.
    const filesOf: (readonly FileDigest[])[] = new Array(plan.formation.length);
    plan.formation.forEach((planned, index) => {
      const entry = values[index] as PolicyValues;
      const modes = modesOf(entry, modeBasis);
      if (!entry.dynamic) {
        filesOf[index] = this.staticFiles(entry, planned, modes);
        return;
      }
      // Expanded values depend on the node (its digests are its own), the policy's values (the
      // entry) and what their references read: equal readings expand equally.
      const key = `${planned.contextKey}\u0000${modes.key}\u0000${referencedValuesKey(entry.references, context)}`;
      const known = own.dynamic.get(entry);
      if (
        known?.key === key &&
        (!materialise || (stored !== undefined && known.files.every((file) => stored(file.sha256))))
      ) {
        unknown.push(...known.unknown);
        filesOf[index] = known.files;
        return;
      }
      const expanded: NodeError[] = [];
      const instances = mapList(entry.policy.drafts, (draft, draftIndex) => {
        const resolved = resolveValues(draft, context);
        expanded.push(...resolved.unknown);
        return { values: resolved.values, mode: modes.of(draftIndex) };
      });
      const files = entry.unique
        ? renderFiles(entry.policy, instances, planned.context)
        : this.render(entry.policy, instances, planned.context);
      unknown.push(...expanded);
      filesOf[index] = files;
      // Entries of replaced policy values are dead weight: drop them all now and then.
      if (own.dynamic.size >= MAX_DYNAMIC_PER_NODE) own.dynamic.clear();
      own.dynamic.set(entry, {
        key,
        files: mapList(files, digestOf),
        unknown: expanded,
      });
    });
    // Loops, not flatMap: this runs for every node, and flatMap is the slow way to concatenate here.
    const errors: NodeError[] = [...plan.errorsBefore, ...levels.levels.conflicts];
    for (const entry of values) for (const error of entry.missing) errors.push(error);
    for (const error of unknown) errors.push(error);
    for (const error of plan.errorsAfter) errors.push(error);
    const policyFiles: FileDigest[] = [];
    for (const index of plan.applyOrder) for (const file of filesOf[index] ?? []) policyFiles.push(file);

    let hash: string | null = null;
    let ownProperties: OwnProperties | undefined;
    if (errors.length === 0) {
      ownProperties = this.propertiesDigest(own, levels, properties);
      const digests = [
        LIBRARY_FILE,
        own.system,
        ownProperties.digest,
        plan.promises,
        plan.csv,
        ...policyFiles,
      ];
      const tooLarge = bundleSizeError(digests, this.compiled.settings.maxBundleBytes);
      if (tooLarge) errors.push(tooLarge);
      else hash = bundleHash(digests);
    }
    const status = errors.length > 0 ? 'failed' : 'ok';
    const result: NodeResult = { nodeId, status, errors, hash, inputsKey, policies: plan.policies.length };
    if (!options.materialise) return { result };
    // The digests are known: the contents are made again, not hashed again, and only those the
    // caller does not hold.
    const unless = (digest: FileDigest, content: () => string): BundleEntry =>
      stored?.(digest.sha256) ? digest : { ...digest, content: content() };
    const propertiesEntry = ({ digest, content }: OwnProperties): BundleEntry =>
      unless(digest, () => content ?? propertiesFileOf(properties));
    const files: BundleEntry[] =
      status === 'ok'
        ? [
            LIBRARY_FILE,
            unless(own.system, () => renderSystemBundles(node)),
            propertiesEntry(ownProperties ?? this.propertiesDigest(own, levels, properties)),
            ...planFiles(plan, stored),
            ...policyFiles,
            bundleFile(GENERATED_AT_FILE, `${options.generatedAt ?? 0}\n`),
          ]
        : [];
    const bundle = assembleBundle(
      {
        nodeId,
        status,
        errors,
        ordering: mode,
        // Made again each time: most plans serve one node, and kept they would outweigh the plan.
        // The policies with their directives as they are now (a plan keeps those it was built with).
        policies: manifestPolicies(
          mapList(plan.applyOrder, (index) => (values[index] as PolicyValues).policy),
          plan.edges,
          modeBasis,
        ),
        properties,
        files,
        hash,
      },
      options,
    );
    return { result, bundle };
  }

  /** The digest of the node's system bundle, kept while the node entity lives. */
  private digestsOf(node: FleetNode): NodeDigests {
    let digests = this.nodeDigests.get(node);
    if (!digests) {
      const system = bundleFile(SYSTEM_BUNDLES_FILE, renderSystemBundles(node));
      digests = { system: digestOf(system), dynamic: new Map() };
      this.nodeDigests.set(node, digests);
    }
    return digests;
  }

  /**
   * The digest of the node's properties file, computed again when its levels changed; then with the
   * text it was computed from, which a bundle materialised in the same call takes instead of
   * rendering it a second time (a node-property change is most of a steady load).
   */
  private propertiesDigest(digests: NodeDigests, levels: Levels, properties: JsonObject): OwnProperties {
    if (digests.levelsSerial !== levels.serial || !digests.properties) {
      const file = bundleFile(PROPERTIES_FILE, propertiesFileOf(properties));
      digests.levelsSerial = levels.serial;
      digests.properties = digestOf(file);
      return { digest: digests.properties, content: file.content };
    }
    return { digest: digests.properties };
  }

  private serialOf(value: object): number {
    let serial = this.serials.get(value);
    if (serial === undefined) {
      serial = this.nextSerial++;
      this.serials.set(value, serial);
    }
    return serial;
  }

  private levelsOf(node: FleetNode): Levels {
    const groups = levelGroups(this.compiled, this.compiled.groupsOfNode.get(node.id) ?? []);
    const key = mapList(groups, (group) => group.id).join(LEVEL_KEY_SEPARATOR);
    let levels = this.levels.get(key);
    if (!levels || !this.isCurrentLevels(levels)) {
      levels = {
        serial: this.nextSerial++,
        levels: groupLevels(this.compiled, groups, false),
        groups,
        parametersVersion: this.parametersVersion,
        builtAt: this.epoch,
        checkedAt: this.epoch,
      };
      this.levels.set(key, levels);
    } else if (levels.parametersVersion !== this.parametersVersion) {
      levels = this.withCurrentParameters(levels);
      this.levels.set(key, levels);
    }
    return levels;
  }

  /**
   * Levels merged at an older parameter version, with the parameters changed since merged again
   * (global value at the bottom, then the groups' in level order): a global parameter change costs
   * each level one property, not a whole merge. Conflicts are between groups: they stay as they are.
   */
  /** Whether none of the levels' groups changed since they were merged; remembered until the next change. */
  private isCurrentLevels(levels: Levels): boolean {
    if (levels.checkedAt === this.epoch) return true;
    for (const group of levels.groups)
      if ((this.groupChangedAt.get(group.id) ?? -1) > levels.builtAt) return false;
    levels.checkedAt = this.epoch;
    return true;
  }

  private withCurrentParameters(stale: Levels): Levels {
    const merged = new Map(stale.levels.merged);
    const modes = new Map(stale.levels.modes);
    for (const [name, changedAt] of this.parameterChangedAt) {
      if (changedAt <= stale.parametersVersion) continue;
      const stack: { value: Json; mode: string | undefined }[] = [];
      // Own keys only, as the merge reads them: a parameter may be called `constructor`.
      if (Object.hasOwn(this.compiled.parameters, name))
        stack.push({
          value: this.compiled.parameters[name] as Json,
          mode: ownValue(this.compiled.settings.parameterInheritModes, name),
        });
      for (const group of stale.groups)
        if (Object.hasOwn(group.properties, name))
          stack.push({
            value: group.properties[name] as Json,
            mode: ownValue(group.inheritModes ?? NO_MODES, name),
          });
      modes.delete(name);
      if (stack.length === 0) merged.delete(name);
      else {
        const { value, mode } = mergeLayers(stack);
        merged.set(name, value);
        if (mode !== undefined) modes.set(name, mode);
      }
    }
    return {
      serial: this.nextSerial++,
      levels: { ...stale.levels, merged, modes },
      groups: stale.groups,
      parametersVersion: this.parametersVersion,
      builtAt: stale.builtAt,
      checkedAt: stale.checkedAt,
    };
  }

  private planOf(ruleIds: readonly string[], mode: OrderingMode): NodePlan {
    const key = `${mode}\u0000${ruleIds.join('\u0000')}`;
    const cached = this.plans.get(key);
    if (cached && (cached.checkedAt === this.epoch || this.isCurrent(cached))) return cached;
    const plan = this.buildPlan(ruleIds, mode);
    this.plans.set(key, plan);
    return plan;
  }

  /** Whether no rule of the plan changed since it was built; remembered until the next change. */
  private isCurrent(plan: NodePlan): boolean {
    for (const ruleId of plan.ruleIds)
      if ((this.ruleChangedAt.get(ruleId) ?? -1) > plan.builtAt) return false;
    plan.checkedAt = this.epoch;
    return true;
  }

  private buildPlan(ruleIds: readonly string[], mode: OrderingMode): NodePlan {
    const compiled = this.compiled;
    const drafts: Draft[] = [];
    for (const ruleId of ruleIds) for (const draft of this.draftsOfRule(ruleId)) drafts.push(draft);
    const formed = formPolicies(drafts, (techniqueId, techniqueDrafts) => {
      // Most techniques come with one draft on a node: kept with the draft, no key to build.
      if (techniqueDrafts.length === 1) {
        const draft = techniqueDrafts[0] as Draft;
        let policies = this.singleDraftPolicies.get(draft);
        if (!policies) {
          policies = formTechniquePolicies(techniqueId, techniqueDrafts);
          this.singleDraftPolicies.set(draft, policies);
        }
        return policies;
      }
      // Drafts are kept per rule (`draftsOfRule`): one serial stands for the rule, directive and technique.
      let key = techniqueId;
      for (const draft of techniqueDrafts) key += ` ${this.serialOf(draft)}`;
      let policies = this.techniquePolicies.get(key);
      if (!policies) {
        policies = formTechniquePolicies(techniqueId, techniqueDrafts);
        this.techniquePolicies.set(key, policies);
      }
      return policies;
    });
    const formation = formed.policies;
    const facts = mapList(formation, factsOf);
    const graph = buildPolicyGraph(
      formation,
      compiled.directives,
      (directiveId) => compiled.directives.get(directiveId) as Draft['directive'],
      compiled.relationships,
      // A plan's policies hold the directives current when it is built: what they declare is known.
      (_policy, index) => (facts[index] as PolicyFacts).declaresRelations,
    );
    const ordered = orderPolicies(
      formation,
      graph.edges,
      orderingComparator(mode, compiled.settings.orderingSeed),
    );
    let planned: PlannedPolicy[];
    if (graph.edges.length === 0) {
      // No relationship, no refresh: each policy plans the same in every plan it is part of.
      planned = mapList(facts, (fact) => fact.unrelated);
    } else {
      const contexts = policyContexts(ordered.order, graph.edges);
      planned = mapList(formation, (policy) => {
        const context = contexts.get(policy.id) as PolicyContext;
        return {
          policy,
          context,
          contextKey: contextKeyOf(context),
        };
      });
    }
    const formationIndex = new Map<FormedPolicy, number>();
    formation.forEach((policy, index) => formationIndex.set(policy, index));
    const applyOrder = ordered.order.map((policy) => formationIndex.get(policy) as number);
    const shapes = mapList(applyOrder, (index) => (facts[index] as PolicyFacts).shape);
    let csv = '';
    for (const shape of shapes) csv += shape.csv;
    return {
      serial: this.nextSerial++,
      ruleIds: [...ruleIds],
      builtAt: this.epoch,
      checkedAt: this.epoch,
      policies: mapList(applyOrder, (index) => planned[index] as PlannedPolicy),
      formation: planned,
      applyOrder,
      edges: graph.edges,
      errorsBefore: formed.errors,
      errorsAfter:
        graph.errors.length + ordered.errors.length === 0 ? [] : [...graph.errors, ...ordered.errors],
      promises: digestOf(bundleFile(PROMISES_FILE, quotedPromisesCfOf(shapes))),
      csv: digestOf(bundleFile(DIRECTIVES_CSV_FILE, csv)),
    };
  }

  /**
   * A rule's drafts, the same objects as long as its rule, directives and techniques are: what is
   * cached by draft (names, formed technique policies) is found again by every plan using the rule.
   */
  private draftsOfRule(ruleId: string): readonly Draft[] {
    const known = this.ruleDrafts.get(ruleId);
    if (known?.checkedAt === this.epoch) return known.drafts;
    const fresh = draftsOfRules(this.compiled, [ruleId]);
    const same =
      known !== undefined &&
      known.drafts.length === fresh.length &&
      known.drafts.every((draft, index) => {
        const other = fresh[index] as Draft;
        return (
          draft.rule === other.rule &&
          draft.directive === other.directive &&
          draft.technique === other.technique
        );
      });
    const drafts = same ? known.drafts : fresh;
    this.ruleDrafts.set(ruleId, { checkedAt: this.epoch, drafts });
    return drafts;
  }

  /** The plan's policies with their current values, looked up once per plan and change. */
  private planValues(plan: NodePlan): { readonly entries: readonly PolicyValues[]; readonly key: string } {
    if (plan.values?.epoch === this.epoch) return plan.values;
    const entries = mapList(plan.formation, (planned) => this.valuesOf(planned.policy));
    plan.values = { epoch: this.epoch, entries, key: mapList(entries, (entry) => entry.key).join(',') };
    return plan.values;
  }

  /** The policy with its directives' current values (see `PolicyValues`). */
  private valuesOf(policy: FormedPolicy): PolicyValues {
    const checked = this.policyValues.get(policy);
    if (checked?.checkedAt === this.epoch) return checked;
    let same = true;
    let key = '';
    const directives = mapList(policy.drafts, (draft) => {
      const current = this.compiled.directives.get(draft.directive.id) ?? draft.directive;
      if (current !== draft.directive) same = false;
      key += `${this.serialOf(current)}.`;
      return current;
    });
    if (checked?.key === key) {
      checked.checkedAt = this.epoch;
      return checked;
    }
    const current: FormedPolicy = same
      ? policy
      : {
          ...policy,
          drafts: mapList(policy.drafts, (draft, index) => ({
            ...draft,
            directive: directives[index] as Directive,
          })),
        };
    const dynamic = current.drafts.some(dependsOnNode);
    const entry: PolicyValues = {
      key,
      policy: current,
      dynamic,
      references: dynamic ? flatMapList(current.drafts, referencesOfDraft) : [],
      unique: current.drafts.some((draft) =>
        IDENTITY_REFERENCE.test(JSON.stringify(draft.directive.parameters)),
      ),
      missing: flatMapList(current.drafts, missingParameters),
      ownModes: current.drafts.some((draft) => draft.directive.policyMode !== undefined),
      files: new Map(),
      checkedAt: this.epoch,
    };
    this.policyValues.set(policy, entry);
    return entry;
  }

  /** A policy whose values do not depend on the node: rendered once per render context. */
  private staticFiles(
    entry: PolicyValues,
    planned: PlannedPolicy,
    modes: InstanceModes,
  ): readonly BundleFile[] {
    // Most policies run in enforce everywhere: their key is the context's alone.
    const key = modes.key === ENFORCE.key ? planned.contextKey : `${planned.contextKey}\u0000${modes.key}`;
    let files = entry.files.get(key);
    if (!files) {
      const instances = mapList(entry.policy.drafts, (draft, index) => ({
        values: resolveValues(draft, undefined).values,
        mode: modes.of(index),
      }));
      files = renderFiles(entry.policy, instances, planned.context);
      entry.files.set(key, files);
    }
    return files;
  }

  /** A policy's files, rendered once per distinct technique, policy, directives, context and resolved values. */
  private render(
    policy: FormedPolicy,
    instances: readonly RenderInstance[],
    context: PolicyContext,
  ): readonly BundleFile[] {
    const key = [
      this.serialOf(policy.technique as Technique),
      policy.id,
      policy.kind,
      // The files name the directives (audit header, report label, method call): two directives of
      // one unique technique with equal values render differently.
      mapList(policy.drafts, (draft) => draft.directive.id).join(','),
      contextKeyOf(context),
      mapList(instances, (instance) => instance.mode ?? 'enforce').join(','),
      // Equal texts mean equal values, key order included: all a cache key needs, cheaper than canonical.
      JSON.stringify(mapList(instances, (instance) => instance.values)),
    ].join('\u0000');
    let files = this.rendered.get(key);
    if (!files) {
      files = renderFiles(policy, instances, context);
      this.rendered.set(key, files);
    }
    return files;
  }
}

const NO_CONTEXT_KEY = contextKeyOf(NO_CONTEXT);

/** What a formed policy is in every plan holding it, made once per policy object. */
interface PolicyFacts {
  /** promises.cf and rudder-directives.csv of the policy: its shape, not its values. */
  readonly shape: PolicyShape;
  /** The policy planned without relationships: one object shared by the plans holding it. */
  readonly unrelated: PlannedPolicy;
  /** Some directive of the policy declares a relationship (`before`, `require`, ...). */
  readonly declaresRelations: boolean;
}

const policyFacts = new WeakMap<FormedPolicy, PolicyFacts>();

function factsOf(policy: FormedPolicy): PolicyFacts {
  let facts = policyFacts.get(policy);
  if (!facts) {
    facts = {
      shape: { ...quotedLayout(policyLayout(policy)), csv: directivesCsvLines(policy) },
      unrelated: { policy, context: NO_CONTEXT, contextKey: NO_CONTEXT_KEY },
      declaresRelations: policy.drafts.some(({ directive }) => declaresRelations(directive)),
    };
    policyFacts.set(policy, facts);
  }
  return facts;
}

/** What promises.cf and rudder-directives.csv say of a policy: its shape, not its values. */
function shapeOf(policy: FormedPolicy): PolicyShape {
  return factsOf(policy).shape;
}

/** promises.cf and rudder-directives.csv of a plan, with their contents unless held (`stored`). */
function planFiles(plan: NodePlan, stored: StoredDigests | undefined): BundleEntry[] {
  if (stored?.(plan.promises.sha256) && stored(plan.csv.sha256)) return [plan.promises, plan.csv];
  const planShapes = mapList(plan.policies, (planned) => shapeOf(planned.policy));
  return [
    { ...plan.promises, content: quotedPromisesCfOf(planShapes) },
    { ...plan.csv, content: mapList(planShapes, (shape) => shape.csv).join('') },
  ];
}

function referencesOfDraft(draft: Draft): ParsedReference[] {
  const references: ParsedReference[] = [];
  for (const parameter of draft.technique.parameters) {
    const given = draft.directive.parameters[parameter.name] ?? parameter.default;
    if (given !== undefined) referencesIn(given, references);
  }
  return references;
}

function digestOf(file: BundleFile): FileDigest {
  return { path: file.path, sha256: file.sha256, bytes: file.bytes };
}

/** The policy modes of a policy's directives on a node, and a key of them. */
interface InstanceModes {
  readonly key: string;
  of(draftIndex: number): PolicyMode;
}

const uniformModes = (mode: PolicyMode): InstanceModes => ({ key: mode, of: () => mode });
const ENFORCE = uniformModes('enforce');
const AUDIT = uniformModes('audit');

function modesOf(entry: PolicyValues, basis: NodeModeBasis): InstanceModes {
  if (basis.fixed || !entry.ownModes) return basis.mode === 'enforce' ? ENFORCE : AUDIT;
  const modes = mapList(entry.policy.drafts, (draft) => directiveMode(basis, draft.directive).mode);
  return { key: modes.join(','), of: (draftIndex) => modes[draftIndex] ?? basis.mode };
}

function renderFiles(
  policy: FormedPolicy,
  instances: readonly RenderInstance[],
  context: PolicyContext,
): BundleFile[] {
  return mapList(renderPolicy(policy, instances, context).files, ([path, content]) =>
    bundleFile(path, content),
  );
}

const NO_MODES: Readonly<Record<string, string>> = {};

function ownValue(record: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
