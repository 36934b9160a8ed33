import type { Draft, FormedPolicy } from '../merge/policies';
import { draftsOfNode, formPolicies } from '../merge/policies';
import type { FleetNode, OrderingMode, PolicyMode, TechniqueParameter } from '../model/fleet';
import type { NodeModeBasis, PolicyModeSource } from '../policy-mode/policy-mode';
import { directiveMode, nodeModeBasis } from '../policy-mode/policy-mode';
import { ORDERING_MODES } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import type { PolicyEdge } from '../ordering/order';
import { buildPolicyGraph, orderingComparator, orderPolicies } from '../ordering/order';
import type { ExpansionContext } from '../properties/expand';
import { expandReferences, hasGenerationReferences } from '../properties/expand';
import type { InheritedProperties } from '../properties/inherit';
import { inheritProperties } from '../properties/inherit';
import { ORDERING_PROPERTY } from '../validation/validate';
import type { CompiledFleet } from '../index/fleet-index';
import type { GenerateOptions, NodeError } from './types';
import { mapList } from '../model/lists';

/** One directive's values in a policy, every technique parameter filled and expanded, and its mode. */
export interface ResolvedInstance {
  readonly draft: Draft;
  readonly values: Readonly<Record<string, Json>>;
  readonly mode: PolicyMode;
  readonly modeSource: PolicyModeSource;
}

/** Everything generation decides for a node; rendering and explanation both read it. */
export interface NodeComputation {
  readonly node: FleetNode;
  readonly status: 'ok' | 'failed' | 'ignored';
  readonly errors: readonly NodeError[];
  readonly warnings: readonly string[];
  readonly ordering: { readonly mode: OrderingMode; readonly source: 'fleet' | 'node property' | 'option' };
  /** In apply order (default order when the node failed on a cycle). */
  readonly policies: readonly FormedPolicy[];
  readonly edges: readonly PolicyEdge[];
  readonly onCycle: ReadonlySet<string>;
  readonly instances: ReadonlyMap<string, readonly ResolvedInstance[]>;
  /** What the node's directives' policy modes start from (semantics.md §5b). */
  readonly modeBasis: NodeModeBasis;
  readonly inherited: InheritedProperties;
  readonly compare: (a: FormedPolicy, b: FormedPolicy) => number;
}

export function computeNode(
  compiled: CompiledFleet,
  nodeId: string,
  options: GenerateOptions = {},
): NodeComputation {
  const node = compiled.nodes.get(nodeId);
  if (!node) throw new Error(`unknown node ${nodeId}`);
  const inherited = inheritProperties(compiled, node);
  const ordering = orderingOf(compiled, inherited.properties[ORDERING_PROPERTY], options);
  const compare = orderingComparator(ordering.mode, compiled.settings.orderingSeed);
  const modeBasis = nodeModeBasis(compiled.settings, node);
  if (node.state === 'ignored') {
    return {
      node,
      status: 'ignored',
      errors: [],
      warnings: [],
      ordering,
      policies: [],
      edges: [],
      onCycle: new Set(),
      instances: new Map(),
      modeBasis,
      inherited,
      compare,
    };
  }

  const drafts = node.state === 'empty-policies' ? [] : draftsOfNode(compiled, nodeId);
  const formed = formPolicies(drafts);
  const missing: NodeError[] = [];
  const unknown: NodeError[] = [];
  const context = expansionContext(compiled, node, inherited.properties);
  const instances = new Map<string, ResolvedInstance[]>();
  for (const policy of formed.policies) {
    instances.set(
      policy.id,
      mapList(policy.drafts, (draft) => {
        missing.push(...missingParameters(draft));
        const resolved = resolveValues(draft, context);
        unknown.push(...resolved.unknown);
        const mode = directiveMode(modeBasis, draft.directive);
        return { draft, values: resolved.values, mode: mode.mode, modeSource: mode.source };
      }),
    );
  }

  const graph = buildPolicyGraph(
    formed.policies,
    compiled.directives,
    (directiveId) => compiled.directives.get(directiveId) as Draft['directive'],
    compiled.relationships,
  );
  const ordered = orderPolicies(formed.policies, graph.edges, compare);
  const errors = [
    ...formed.errors,
    ...inherited.errors,
    ...missing,
    ...unknown,
    ...graph.errors,
    ...ordered.errors,
  ];

  return {
    node,
    status: errors.length > 0 ? 'failed' : 'ok',
    errors,
    warnings: graph.warnings,
    ordering,
    policies: ordered.order,
    edges: graph.edges,
    onCycle: ordered.onCycle,
    instances,
    modeBasis,
    inherited,
    compare,
  };
}

export function orderingOf(
  compiled: CompiledFleet,
  property: Json | undefined,
  options: GenerateOptions,
): NodeComputation['ordering'] {
  if (options.ordering) return { mode: options.ordering, source: 'option' };
  if (typeof property === 'string' && (ORDERING_MODES as readonly string[]).includes(property)) {
    return { mode: property as OrderingMode, source: 'node property' };
  }
  return { mode: compiled.settings.ordering, source: 'fleet' };
}

export function expansionContext(
  compiled: CompiledFleet,
  node: FleetNode,
  properties: JsonObject,
): ExpansionContext {
  return {
    properties,
    parameters: compiled.parameters,
    nodeId: node.id,
    hostname: node.hostname,
    policyServerId: node.policyServer,
  };
}

const sortedByTechnique = new WeakMap<Draft['technique'], readonly TechniqueParameter[]>();

/** Declared parameters are a set: their order in the technique must not change any output. */
function sortedParameters(draft: Draft): readonly TechniqueParameter[] {
  let sorted = sortedByTechnique.get(draft.technique);
  if (!sorted) {
    sorted = [...draft.technique.parameters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    sortedByTechnique.set(draft.technique, sorted);
  }
  return sorted;
}

/** A draft's parameter values before expansion, in name order: what every node's expansion starts from. */
interface DraftValue {
  readonly name: string;
  readonly given: Json | undefined;
  /** Holds a generation-time reference: expanded per node. */
  readonly references: boolean;
}

const draftValues = new WeakMap<Draft, readonly DraftValue[]>();

function valuesOfDraft(draft: Draft): readonly DraftValue[] {
  let values = draftValues.get(draft);
  if (!values) {
    values = mapList(sortedParameters(draft), (parameter) => {
      const given = draft.directive.parameters[parameter.name] ?? parameter.default;
      return {
        name: parameter.name,
        given,
        references: given !== undefined && hasGenerationReferences(given),
      };
    });
    draftValues.set(draft, values);
  }
  return values;
}

/** Required parameters a directive leaves unset: the node fails whatever it is. */
export function missingParameters(draft: Draft): NodeError[] {
  const { directive, technique, rule } = draft;
  return mapList(
    sortedParameters(draft).filter(
      (parameter) =>
        parameter.required && (directive.parameters[parameter.name] ?? parameter.default) === undefined,
    ),
    (parameter) => ({
      code: 'MISSING_PARAMETER',
      message: `Directive[${directive.id}] does not set the required parameter ${parameter.name} of technique ${technique.id} ${technique.version}`,
      directiveIds: [directive.id],
      ruleIds: [rule.id],
    }),
  );
}

/** Whether a draft's values depend on the node (hold a generation-time reference). */
export function dependsOnNode(draft: Draft): boolean {
  return valuesOfDraft(draft).some((value) => value.references);
}

/** Every technique parameter of a draft filled (unset ones are empty) and expanded for a node. */
export function resolveValues(
  draft: Draft,
  context: ExpansionContext | undefined,
): { values: Record<string, Json>; unknown: NodeError[] } {
  const { directive, rule } = draft;
  const values: Record<string, Json> = {};
  const unknown: NodeError[] = [];
  for (const { name, given, references } of valuesOfDraft(draft)) {
    if (given === undefined) {
      values[name] = '';
      continue;
    }
    if (!context || !references) {
      values[name] = given;
      continue;
    }
    const expanded = expandReferences(given, context);
    for (const reference of expanded.unknown) {
      unknown.push({
        code: 'UNKNOWN_VARIABLE',
        message: `Directive[${directive.id}] parameter ${name}: ${reference} resolves to nothing and has no default`,
        directiveIds: [directive.id],
        ruleIds: [rule.id],
      });
    }
    values[name] = expanded.value;
  }
  return { values, unknown };
}
