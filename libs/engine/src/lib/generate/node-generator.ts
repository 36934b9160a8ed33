import { LRUCache } from 'lru-cache';
import type { CompiledFleet, IndexDelta } from '../index/fleet-index';
import type { FormedPolicy } from '../merge/policies';
import { draftsOfRules, formPolicies, formTechniquePolicies } from '../merge/policies';
import type { Draft, TechniquePolicies } from '../merge/policies';
import type { FleetNode, OrderingMode, Technique } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import { canonicalJson } from '../model/json';
import type { PolicyEdge } from '../ordering/order';
import { buildPolicyGraph, orderingComparator, orderPolicies } from '../ordering/order';
import type { GroupLevels } from '../properties/inherit';
import { groupLevels, levelGroups, nodeProperties } from '../properties/inherit';
import type { PolicyContext, RenderedPolicy } from '../render/node-files';
import {
  DIRECTIVES_CSV_FILE,
  directivesCsv,
  GENERATED_AT_FILE,
  policyContexts,
  policyLayout,
  PROMISES_FILE,
  PROPERTIES_FILE,
  promisesCfOf,
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
import { assembleBundle, bundleFile, bundleHash, ignoredBundle, manifestPolicies } from './generate';
import type { BundleFile, GenerateOptions, ManifestPolicy, NodeBundle, NodeError } from './types';

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

const DEFAULT_LIMITS: Required<GeneratorLimits> = {
  plans: 20_000,
  levels: 50_000,
  renderedBytes: 256 * 1024 * 1024,
};

interface PlannedPolicy {
  readonly policy: FormedPolicy;
  readonly context: PolicyContext;
  /** Set when no value depends on the node: rendered once for every node of the plan. */
  readonly files?: readonly BundleFile[];
}

/** Everything a node's policies are that depends on its rules (and ordering mode) alone. */
interface NodePlan {
  readonly serial: number;
  /** In apply order. */
  readonly policies: readonly PlannedPolicy[];
  /** Policies in formation order: the order per-node errors are reported in. */
  readonly formation: readonly PlannedPolicy[];
  readonly edges: readonly PolicyEdge[];
  readonly errorsBefore: readonly NodeError[];
  readonly missing: readonly NodeError[];
  readonly errorsAfter: readonly NodeError[];
  readonly promises: BundleFile;
  readonly csv: BundleFile;
  /** Built on first use: only materialised bundles need it. */
  manifestPolicies?: readonly ManifestPolicy[];
}

interface Levels {
  readonly serial: number;
  readonly levels: GroupLevels;
}

const LIBRARY_FILE = bundleFile(SYSTEM_LIBRARY_FILE, SYSTEM_LIBRARY);

/**
 * Generates nodes through caches: a plan per distinct rule set (drafts, merge, order, the files of
 * policies whose values do not depend on the node), property levels per distinct group set, and
 * rendered policy files by their resolved inputs. Equal to `generateNode`, byte for byte.
 *
 * Memory is bounded: each cache is an LRU (plans and levels by count, rendered files by bytes);
 * an evicted entry is rebuilt on its next use. Changes evict what they make stale (`invalidate`).
 */
export class NodeGenerator {
  private readonly plans: LRUCache<string, NodePlan>;
  private readonly planKeysByRule = new Map<string, Set<string>>();
  private readonly levels: LRUCache<string, Levels>;
  private readonly rendered: LRUCache<string, readonly BundleFile[]>;
  /** A technique's policies per distinct set of drafts (by the rules', directives' and technique's identity). */
  private readonly techniquePolicies: LRUCache<string, TechniquePolicies>;
  /** Files of a policy whose values do not depend on the node, per render context. */
  private readonly staticFiles = new WeakMap<FormedPolicy, Map<string, readonly BundleFile[]> | null>();
  private readonly identityPolicies = new WeakMap<FormedPolicy, boolean>();
  private readonly serials = new WeakMap<object, number>();
  private nextSerial = 1;

  constructor(
    private readonly compiled: CompiledFleet,
    private readonly options: { readonly ordering?: OrderingMode; readonly limits?: GeneratorLimits } = {},
  ) {
    const limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.plans = new LRUCache({ max: limits.plans });
    this.levels = new LRUCache({ max: limits.levels });
    this.techniquePolicies = new LRUCache({ max: limits.plans * 4 });
    this.rendered = new LRUCache({
      maxSize: limits.renderedBytes,
      sizeCalculation: (files) => files.reduce((total, file) => total + file.content.length + 100, 0),
    });
  }

  /** Drops what a change made stale: plans of changed rules, property levels, everything on settings. */
  invalidate(delta: IndexDelta): void {
    if (delta.settingsChanged) {
      this.plans.clear();
      this.planKeysByRule.clear();
    }
    for (const ruleId of delta.dirtyRules) {
      for (const key of this.planKeysByRule.get(ruleId) ?? []) this.plans.delete(key);
      this.planKeysByRule.delete(ruleId);
    }
    if (delta.propertyLayersChanged) this.levels.clear();
  }

  /** What a node's bundle would be computed from now (see `NodeResult.inputsKey`). */
  inputsKey(nodeId: string): string {
    const node = this.compiled.nodes.get(nodeId);
    if (!node) throw new Error(`unknown node ${nodeId}`);
    return this.prepare(node).inputsKey;
  }

  private prepare(node: FleetNode): {
    inputsKey: string;
    levels?: Levels;
    plan?: NodePlan;
    properties?: JsonObject;
    mode?: OrderingMode;
  } {
    const nodeSerial = this.serialOf(node);
    if (node.state === 'ignored') return { inputsKey: `ignored:${nodeSerial}` };
    const levels = this.levelsOf(node);
    const properties = nodeProperties(levels.levels, node);
    const mode = orderingOf(this.compiled, properties[ORDERING_PROPERTY], this.options).mode;
    const plan = this.planOf(
      node.state === 'empty-policies' ? [] : (this.compiled.rulesOfNode.get(node.id) ?? []),
      mode,
    );
    return { inputsKey: `${plan.serial}:${levels.serial}:${nodeSerial}`, levels, plan, properties, mode };
  }

  /** The node's result, and its whole bundle when `materialise` is set. */
  generate(
    nodeId: string,
    options: GenerateOptions & { readonly materialise?: boolean } = {},
  ): { result: NodeResult; bundle?: NodeBundle } {
    const generated = this.generateUnless(nodeId, undefined, options);
    return generated as { result: NodeResult; bundle?: NodeBundle };
  }

  /** `generate`, unless the node's inputs key is `inputsKey`: then nothing is computed (undefined). */
  generateUnless(
    nodeId: string,
    inputsKey: string | undefined,
    options: GenerateOptions & { readonly materialise?: boolean } = {},
  ): { result: NodeResult; bundle?: NodeBundle } | undefined {
    const node = this.compiled.nodes.get(nodeId);
    if (!node) throw new Error(`unknown node ${nodeId}`);
    const prepared = this.prepare(node);
    if (prepared.inputsKey === inputsKey) return undefined;
    return this.generatePrepared(nodeId, node, prepared, options);
  }

  private generatePrepared(
    nodeId: string,
    node: FleetNode,
    prepared: ReturnType<NodeGenerator['prepare']>,
    options: GenerateOptions & { readonly materialise?: boolean },
  ): { result: NodeResult; bundle?: NodeBundle } {
    const { inputsKey, levels, plan, properties, mode } = prepared;
    if (!levels || !plan || !properties || !mode) {
      const result = { nodeId, status: 'ignored', errors: [], hash: null, inputsKey, policies: 0 } as const;
      return options.materialise ? { result, bundle: ignoredBundle(nodeId) } : { result };
    }

    const context = expansionContext(this.compiled, node, properties);
    const unknown: NodeError[] = [];
    const dynamicFiles = new Map<string, readonly BundleFile[]>();
    for (const planned of plan.formation) {
      if (planned.files) continue;
      const instances = planned.policy.drafts.map((draft) => {
        const resolved = resolveValues(draft, context);
        unknown.push(...resolved.unknown);
        return { values: resolved.values };
      });
      dynamicFiles.set(
        planned.policy.id,
        this.uniquePerNode(planned.policy)
          ? renderPolicy(planned.policy, instances, planned.context).files.map(([path, content]) =>
              bundleFile(path, content),
            )
          : this.render(planned.policy, instances, planned.context),
      );
    }
    const errors = [
      ...plan.errorsBefore,
      ...levels.levels.conflicts,
      ...plan.missing,
      ...unknown,
      ...plan.errorsAfter,
    ];
    const status = errors.length > 0 ? 'failed' : 'ok';

    const files: BundleFile[] = [];
    if (status === 'ok') {
      files.push(LIBRARY_FILE, bundleFile(SYSTEM_BUNDLES_FILE, renderSystemBundles(node)));
      for (const planned of plan.policies)
        files.push(...(planned.files ?? dynamicFiles.get(planned.policy.id) ?? []));
      files.push(plan.promises, bundleFile(PROPERTIES_FILE, propertiesFileOf(properties)), plan.csv);
    }
    const result: NodeResult = {
      nodeId,
      status,
      errors,
      hash: status === 'ok' ? bundleHash(files) : null,
      inputsKey,
      policies: plan.policies.length,
    };
    if (!options.materialise) return { result };
    if (status === 'ok') files.push(bundleFile(GENERATED_AT_FILE, `${options.generatedAt ?? 0}\n`));
    const bundle = assembleBundle(
      {
        nodeId,
        status,
        errors,
        ordering: mode,
        policies: (plan.manifestPolicies ??= manifestPolicies(
          plan.policies.map((planned) => planned.policy),
          plan.edges,
        )),
        properties,
        files,
      },
      options,
    );
    return { result, bundle };
  }

  /** Cache sizes, for the benchmark and metrics. */
  stats(): { plans: number; levels: number; renderedEntries: number; renderedBytes: number } {
    return {
      plans: this.plans.size,
      levels: this.levels.size,
      renderedEntries: this.rendered.size,
      renderedBytes: this.rendered.calculatedSize,
    };
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
    const key = groups.map((group) => group.id).join('\u0000');
    let levels = this.levels.get(key);
    if (!levels) {
      levels = { serial: this.nextSerial++, levels: groupLevels(this.compiled, groups) };
      this.levels.set(key, levels);
    }
    return levels;
  }

  private planOf(ruleIds: readonly string[], mode: OrderingMode): NodePlan {
    const key = `${mode}\u0000${ruleIds.join('\u0000')}`;
    const cached = this.plans.get(key);
    if (cached) return cached;
    const plan = this.buildPlan(ruleIds, mode);
    this.plans.set(key, plan);
    for (const ruleId of ruleIds) {
      let keys = this.planKeysByRule.get(ruleId);
      if (!keys) this.planKeysByRule.set(ruleId, (keys = new Set()));
      keys.add(key);
    }
    return plan;
  }

  private buildPlan(ruleIds: readonly string[], mode: OrderingMode): NodePlan {
    const compiled = this.compiled;
    const formed = formPolicies(draftsOfRules(compiled, ruleIds), (techniqueId, drafts) => {
      const key = [
        techniqueId,
        ...drafts.map(
          (draft) =>
            `${this.serialOf(draft.rule)}.${this.serialOf(draft.directive)}.${this.serialOf(draft.technique)}`,
        ),
      ].join(' ');
      let policies = this.techniquePolicies.get(key);
      if (!policies) {
        policies = formTechniquePolicies(techniqueId, drafts);
        this.techniquePolicies.set(key, policies);
      }
      return policies;
    });
    const graph = buildPolicyGraph(
      formed.policies,
      compiled.directives,
      (directiveId) => compiled.directives.get(directiveId) as Draft['directive'],
      compiled.relationships,
    );
    const ordered = orderPolicies(
      formed.policies,
      graph.edges,
      orderingComparator(mode, compiled.settings.orderingSeed),
    );
    const contexts = policyContexts(ordered.order, graph.edges);
    const planned = new Map<string, PlannedPolicy>();
    for (const policy of formed.policies) {
      const context = contexts.get(policy.id) as PolicyContext;
      const files = this.staticFilesOf(policy, context);
      planned.set(policy.id, files ? { policy, context, files } : { policy, context });
    }
    const layouts: Omit<RenderedPolicy, 'files'>[] = ordered.order.map(policyLayout);
    return {
      serial: this.nextSerial++,
      policies: ordered.order.map((policy) => planned.get(policy.id) as PlannedPolicy),
      formation: formed.policies.map((policy) => planned.get(policy.id) as PlannedPolicy),
      edges: graph.edges,
      errorsBefore: formed.errors,
      missing: formed.policies.flatMap((policy) => policy.drafts.flatMap(missingParameters)),
      errorsAfter: [...graph.errors, ...ordered.errors],
      promises: bundleFile(PROMISES_FILE, promisesCfOf(layouts)),
      csv: bundleFile(DIRECTIVES_CSV_FILE, directivesCsv(ordered.order)),
    };
  }

  /** Whether a policy's values name the node itself: no other node can share its files. */
  private uniquePerNode(policy: FormedPolicy): boolean {
    let unique = this.identityPolicies.get(policy);
    if (unique === undefined) {
      unique = policy.drafts.some((draft) =>
        /rudder\.node\.(id|hostname)/.test(JSON.stringify(draft.directive.parameters)),
      );
      this.identityPolicies.set(policy, unique);
    }
    return unique;
  }

  /** The files of a policy whose values do not depend on the node, rendered once per context. */
  private staticFilesOf(policy: FormedPolicy, context: PolicyContext): readonly BundleFile[] | undefined {
    let byContext = this.staticFiles.get(policy);
    if (byContext === undefined) {
      byContext = policy.drafts.some(dependsOnNode) ? null : new Map();
      this.staticFiles.set(policy, byContext);
    }
    if (byContext === null) return undefined;
    const key = `${context.refreshContext ?? ''}\u0000${context.marksRepairs ?? ''}`;
    let files = byContext.get(key);
    if (!files) {
      const instances = policy.drafts.map((draft) => ({ values: resolveValues(draft, undefined).values }));
      files = renderPolicy(policy, instances, context).files.map(([path, content]) =>
        bundleFile(path, content),
      );
      byContext.set(key, files);
    }
    return files;
  }

  /** A policy's files, rendered once per distinct technique, policy, context and resolved values. */
  private render(
    policy: FormedPolicy,
    instances: readonly { readonly values: Readonly<Record<string, Json>> }[],
    context: PolicyContext,
  ): readonly BundleFile[] {
    const key = [
      this.serialOf(policy.technique as Technique),
      policy.id,
      policy.kind,
      context.refreshContext ?? '',
      context.marksRepairs ?? '',
      canonicalJson(instances.map((instance) => instance.values as Json)),
    ].join('\u0000');
    let files = this.rendered.get(key);
    if (!files) {
      files = renderPolicy(policy, instances, context).files.map(([path, content]) =>
        bundleFile(path, content),
      );
      this.rendered.set(key, files);
    }
    return files;
  }
}
