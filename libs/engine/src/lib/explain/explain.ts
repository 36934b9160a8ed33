import type { CompiledFleet } from '../index/fleet-index';
import type { NodeComputation } from '../generate/compute-node';
import { computeNode } from '../generate/compute-node';
import { bundleOf } from '../generate/generate';
import type { GenerateOptions } from '../generate/types';
import type { Draft, FormedPolicy } from '../merge/policies';
import { canonicalJson } from '../model/json';
import { orderingKeyText } from '../ordering/order';
import { mergeLayers } from '../properties/inherit';
import { substitute, textOfValue, withoutDataMarks } from '../render/cfengine';
import type {
  ExplainedDraft,
  ExplainedPolicy,
  ExplainedProperty,
  ExplainedVariable,
  NodeExplanation,
} from './types';

export function explainNode(
  compiled: CompiledFleet,
  nodeId: string,
  options: GenerateOptions = {},
): NodeExplanation {
  const computation = computeNode(compiled, nodeId, options);
  const manifest = bundleOf(computation, options, compiled.settings.maxBundleBytes).manifest;
  const manifestPolicies = new Map((manifest?.policies ?? []).map((policy) => [policy.id, policy]));
  const node = computation.node;
  const appliedRules = new Set(compiled.rulesOfNode.get(nodeId) ?? []);
  const rules = [...compiled.rules.values()]
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((rule) => {
      const applied = appliedRules.has(rule.id) && node.state === 'enabled';
      const reason =
        compiled.inactiveRules.get(rule.id) ??
        (node.state !== 'enabled' && appliedRules.has(rule.id)
          ? `the node's state is ${node.state}`
          : undefined) ??
        (applied ? 'the node is in its targets' : 'the node is not in its targets');
      return { id: rule.id, name: rule.name, applied, reason };
    });

  const policies = computation.policies.map((policy, index) =>
    explainPolicy(
      policy,
      index,
      computation,
      compiled.settings.orderingSeed,
      manifestPolicies.get(policy.id),
    ),
  );
  return {
    nodeId,
    hostname: node.hostname,
    status: computation.status,
    state: node.state,
    errors: computation.errors,
    ordering: computation.ordering,
    groups: [...(compiled.groupsOfNode.get(nodeId) ?? [])],
    rules,
    policies: policies.filter((policy): policy is ExplainedPolicy => policy !== undefined),
    variables: explainVariables(computation),
    properties: explainProperties(computation),
    warnings: computation.warnings,
  };
}

function draftView(draft: Draft): ExplainedDraft {
  return {
    directiveId: draft.directive.id,
    directiveName: draft.directive.name,
    ruleId: draft.rule.id,
    ruleName: draft.rule.name,
    priority: draft.directive.priority,
  };
}

function explainPolicy(
  policy: FormedPolicy,
  index: number,
  computation: NodeComputation,
  seed: number,
  manifestPolicy: ExplainedPolicy['policy'] | undefined,
): ExplainedPolicy | undefined {
  if (!manifestPolicy) return undefined;
  const after = computation.edges
    .filter((edge) => edge.to === policy.id)
    .map((edge) => ({ policyId: edge.from, kind: edge.kind, directiveIds: edge.directiveIds }));
  const orderingKey = orderingKeyText(computation.ordering.mode, seed, policy);
  const position = policy.positionDraft;
  const reason =
    after.length > 0
      ? `after ${[...new Set(after.map((edge) => edge.policyId))].join(', ')} by explicit relationship; otherwise by its ${computation.ordering.mode} key ${orderingKey}`
      : `no relationship places it: ${computation.ordering.mode} key ${orderingKey}` +
        (computation.ordering.mode === 'alphanumeric'
          ? ` from rule "${position.rule.name}", directive "${position.directive.name}"`
          : '');
  return {
    position: index + 1,
    policy: manifestPolicy,
    drafts: policy.drafts.map(draftView),
    overridden: policy.overridden.map((draft) => ({ ...draftView(draft), by: draft.by })),
    positionDraft: draftView(position),
    orderingKey,
    after,
    reason,
  };
}

/** Variables declared by `vars` promises: on the agent, the last declaration in bundle order wins. */
function explainVariables(computation: NodeComputation): ExplainedVariable[] {
  const result: ExplainedVariable[] = [];
  for (const policy of computation.policies) {
    const declarations = new Map<string, { directiveId: string; value: string }[]>();
    for (const instance of computation.instances.get(policy.id) ?? []) {
      const text = (name: string): string => {
        const value = instance.values[name];
        return value === undefined ? '' : withoutDataMarks(textOfValue(value));
      };
      for (const promise of policy.technique.promises) {
        if (promise.type !== 'vars') continue;
        const variable = substitute(promise.promiser, text);
        const raw = Object.values(promise.attributes).find((value) => typeof value === 'string');
        const value = typeof raw === 'string' ? substitute(raw, text) : canonicalJson(null);
        declarations.set(variable, [
          ...(declarations.get(variable) ?? []),
          { directiveId: instance.draft.directive.id, value },
        ]);
      }
    }
    for (const [variable, list] of declarations) {
      const effective = list[list.length - 1] as { directiveId: string; value: string };
      result.push({
        policyId: policy.id,
        variable,
        value: effective.value,
        directiveId: effective.directiveId,
        overrides: list.slice(0, -1),
      });
    }
  }
  return result;
}

function explainProperties(computation: NodeComputation): ExplainedProperty[] {
  return [...computation.inherited.layers.entries()].map(([name, layers]) => {
    const last = layers[layers.length - 1] as (typeof layers)[number];
    const view = (layer: (typeof layers)[number]) => ({
      source: layer.from.source,
      ...(layer.from.source === 'group' ? { groupId: layer.from.groupId } : {}),
    });
    const inheritMode = mergeLayers(layers).mode;
    return {
      name,
      value: computation.inherited.properties[name] ?? null,
      ...view(last),
      ...(inheritMode === undefined ? {} : { inheritMode }),
      overrides: layers.slice(0, -1).map((layer) => ({ ...view(layer), value: layer.value })),
    };
  });
}

const MODE_SOURCES = { global: 'the global setting', node: 'the node', directive: 'the directive' } as const;

function policyModeText(policy: ExplainedPolicy['policy']): string {
  if (policy.mode !== 'mixed') {
    const sources = [...new Set(policy.directives.map((directive) => MODE_SOURCES[directive.modeSource]))];
    return `${policy.mode} (from ${sources.join(' and ')})`;
  }
  return (
    'mixed: its directives disagree, each runs in its own mode — ' +
    policy.directives
      .map((directive) => `${directive.id} ${directive.mode} (from ${MODE_SOURCES[directive.modeSource]})`)
      .join(', ')
  );
}

/** The explanation as text for a terminal. */
export function formatExplanation(explanation: NodeExplanation): string {
  const lines: string[] = [];
  lines.push(
    `Node ${explanation.nodeId} (${explanation.hostname}), state ${explanation.state}: ${explanation.status}`,
  );
  lines.push(`Groups: ${explanation.groups.join(', ') || '(none)'}`);
  lines.push(`Ordering: ${explanation.ordering.mode} (from the ${explanation.ordering.source})`);
  for (const error of explanation.errors)
    lines.push(`ERROR ${error.code}: ${error.message.split('\n').join('\n  ')}`);
  lines.push('', 'Rules:');
  for (const rule of explanation.rules)
    lines.push(`  ${rule.applied ? '+' : '-'} ${rule.id} "${rule.name}": ${rule.reason}`);
  lines.push('', 'Policies, in apply order:');
  for (const policy of explanation.policies) {
    const { id, technique, generation, bundle } = policy.policy;
    lines.push(
      `  ${policy.position}. ${id} [${technique.id} ${technique.version}, ${generation}] bundle ${bundle}`,
    );
    lines.push(`     why here: ${policy.reason}`);
    lines.push(
      `     values in order: ${policy.drafts.map((d) => `${d.directiveId} (rule ${d.ruleId} "${d.ruleName}", priority ${d.priority})`).join(' then ')}`,
    );
    for (const overridden of policy.overridden) {
      lines.push(
        `     overridden: ${overridden.directiveId} (rule ${overridden.ruleId}, priority ${overridden.priority}) by ${overridden.by}`,
      );
    }
    for (const edge of policy.after) {
      lines.push(
        `     after ${edge.policyId}: Directive[${edge.directiveIds[0]}] ${edge.kind} Directive[${edge.directiveIds[1]}]`,
      );
    }
    lines.push(`     policy mode: ${policyModeText(policy.policy)}`);
    if (policy.policy.skippedWhenFails.length > 0)
      lines.push(
        `     when it fails on the agent, skipped in that run (failed dependency): ${policy.policy.skippedWhenFails.join(', ')}`,
      );
  }
  if (explanation.variables.length > 0) {
    lines.push('', 'Variables (the last declaration wins on the agent):');
    for (const variable of explanation.variables) {
      const overrides = variable.overrides
        .map((entry) => `${entry.directiveId}=${JSON.stringify(entry.value)}`)
        .join(', ');
      lines.push(
        `  ${variable.policyId}.${variable.variable} = ${JSON.stringify(variable.value)} from ${variable.directiveId}` +
          (overrides ? ` (overrides ${overrides})` : ''),
      );
    }
  }
  lines.push('', 'Properties:');
  for (const property of explanation.properties) {
    const source = property.source === 'group' ? `group ${property.groupId}` : property.source;
    const overrides = property.overrides.map((entry) =>
      entry.source === 'group' ? `group ${entry.groupId}` : entry.source,
    );
    lines.push(
      `  ${property.name} = ${canonicalJson(property.value)} from ${source}${overrides.length > 0 ? ` (over ${overrides.join(', ')})` : ''}` +
        (property.inheritMode ? `, inheritance mode ${property.inheritMode}` : ''),
    );
  }
  for (const warning of explanation.warnings) lines.push(`WARNING: ${warning}`);
  return `${lines.join('\n')}\n`;
}
