import type { Draft, FormedPolicy } from '../merge/policies';
import { draftsOfNode, formPolicies } from '../merge/policies';
import type { FleetNode, OrderingMode } from '../model/fleet';
import { ORDERING_MODES } from '../model/fleet';
import type { Json } from '../model/json';
import type { PolicyEdge } from '../ordering/order';
import { buildPolicyGraph, orderingComparator, orderPolicies } from '../ordering/order';
import { expandReferences } from '../properties/expand';
import type { InheritedProperties } from '../properties/inherit';
import { inheritProperties } from '../properties/inherit';
import { ORDERING_PROPERTY } from '../validation/validate';
import type { CompiledFleet } from './compile';
import type { GenerateOptions, NodeError } from './types';

/** One directive's values in a policy, every technique parameter filled and expanded. */
export interface ResolvedInstance {
  readonly draft: Draft;
  readonly values: Readonly<Record<string, Json>>;
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
  const compare = orderingComparator(ordering.mode, compiled.fleet.settings.orderingSeed);
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
      inherited,
      compare,
    };
  }

  const drafts = node.state === 'empty-policies' ? [] : draftsOfNode(compiled, nodeId);
  const formed = formPolicies(drafts);
  const errors: NodeError[] = [...formed.errors, ...inherited.errors];

  const instances = new Map<string, ResolvedInstance[]>();
  for (const policy of formed.policies) {
    instances.set(
      policy.id,
      policy.drafts.map((draft) => resolveInstance(compiled, node, inherited, draft, errors)),
    );
  }

  const graph = buildPolicyGraph(
    formed.policies,
    new Set(compiled.directives.keys()),
    (directiveId) => compiled.directives.get(directiveId) as Draft['directive'],
    compiled.fleet.relationships,
  );
  errors.push(...graph.errors);
  const ordered = orderPolicies(formed.policies, graph.edges, compare);
  errors.push(...ordered.errors);

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
    inherited,
    compare,
  };
}

function orderingOf(
  compiled: CompiledFleet,
  property: Json | undefined,
  options: GenerateOptions,
): NodeComputation['ordering'] {
  if (options.ordering) return { mode: options.ordering, source: 'option' };
  if (typeof property === 'string' && (ORDERING_MODES as readonly string[]).includes(property)) {
    return { mode: property as OrderingMode, source: 'node property' };
  }
  return { mode: compiled.fleet.settings.ordering, source: 'fleet' };
}

function resolveInstance(
  compiled: CompiledFleet,
  node: FleetNode,
  inherited: InheritedProperties,
  draft: Draft,
  errors: NodeError[],
): ResolvedInstance {
  const { directive, technique, rule } = draft;
  const values: Record<string, Json> = {};
  // Declared parameters are a set: their order in the technique must not change any output.
  for (const parameter of [...technique.parameters].sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  )) {
    const given = directive.parameters[parameter.name] ?? parameter.default;
    if (given === undefined) {
      if (parameter.required) {
        errors.push({
          code: 'MISSING_PARAMETER',
          message: `Directive[${directive.id}] does not set the required parameter ${parameter.name} of technique ${technique.id} ${technique.version}`,
          directiveIds: [directive.id],
          ruleIds: [rule.id],
        });
      }
      values[parameter.name] = '';
      continue;
    }
    const expanded = expandReferences(given, {
      properties: inherited.properties,
      parameters: compiled.fleet.parameters,
      nodeId: node.id,
      hostname: node.hostname,
      policyServerId: node.policyServer,
    });
    for (const reference of expanded.unknown) {
      errors.push({
        code: 'UNKNOWN_VARIABLE',
        message: `Directive[${directive.id}] parameter ${parameter.name}: ${reference} resolves to nothing and has no default`,
        directiveIds: [directive.id],
        ruleIds: [rule.id],
      });
    }
    values[parameter.name] = expanded.value;
  }
  return { draft, values };
}
