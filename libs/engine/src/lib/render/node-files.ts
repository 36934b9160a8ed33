import type { FormedPolicy } from '../merge/policies';
import type { AgentPromiseType, PolicyMode, PromiseTemplate } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import type { NodeComputation } from '../generate/compute-node';
import type { PolicyEdge } from '../ordering/order';
import { agentJson } from './agent-json';
import type { ConcretePromise } from './cfengine';
import {
  agentText,
  AUDIT_ACTION_BODY,
  cfIdentifier,
  CLASSES_BODY,
  concretePromise,
  REPAIRED_CLASS_BODY,
  renderAgentBundle,
  renderMethodsCall,
  quote,
  renderQuotedPromisesCf,
  renderSystemBundles,
  SYSTEM_BUNDLES,
  SYSTEM_LIBRARY,
  textOfValue,
} from './cfengine';
import { mapList } from '../model/lists';

export const ROOT = 'rules/cfengine-community';
export const GENERATED_AT_FILE = `${ROOT}/rudder-promises-generated`;

/** Promise types whose repair changes the system and so may trigger a refresh (not vars, reports...). */
const REPAIRING_TYPES: ReadonlySet<AgentPromiseType> = new Set([
  'users',
  'files',
  'packages',
  'guest_environments',
  'methods',
  'processes',
  'services',
  'commands',
  'storage',
  'databases',
]);

export function policyBundleName(policy: FormedPolicy): string {
  return cfIdentifier(policy.id);
}

/**
 * The parameterised bundle of a separated-with-parameters policy. One per policy, not one per
 * technique: each carries its own refresh context and repair marking.
 */
function parameterisedBundleName(policy: FormedPolicy): string {
  return cfIdentifier(`${policy.id}@${policy.technique.version}`);
}

export function repairedClass(policy: FormedPolicy): string {
  return `policygen_repaired_${policyBundleName(policy)}`;
}

export function failedClass(policy: FormedPolicy): string {
  return `policygen_failed_${policyBundleName(policy)}`;
}

/** How the agent's reports name a policy: its directive, or its technique's policy when merged. */
export function policyLabel(policy: FormedPolicy): string {
  return policy.drafts.length === 1 ? `Directive[${policy.drafts[0]?.directive.id}]` : `Policy[${policy.id}]`;
}

/** A policy that must run, and not fail, before another one runs (semantics.md §3.6). */
export interface FailedDependency {
  readonly policyId: string;
  /** The class its failures set on the agent. */
  readonly failedClass: string;
  readonly label: string;
}

/** How a policy takes part in its node's relationships: refreshed by whom, marking its repairs. */
export interface PolicyContext {
  /** Class expression of the notifying policies' repairs: guards the refresh promises. */
  readonly refreshContext: string | undefined;
  /** The class this policy's repairs set, when some policy is notified by it. */
  readonly marksRepairs: string | undefined;
  /** The class this policy's failures set, when some policy must follow it. */
  readonly marksFailures: string | undefined;
  /** Every policy it follows, transitively, by any relationship: it is skipped when one fails. */
  readonly dependencies: readonly FailedDependency[];
}

export const NO_CONTEXT: PolicyContext = {
  refreshContext: undefined,
  marksRepairs: undefined,
  marksFailures: undefined,
  dependencies: [],
};

/** What makes two contexts render the same policy differently: a cache key. */
export function contextKeyOf(context: PolicyContext): string {
  return [
    context.refreshContext ?? '',
    context.marksRepairs ?? '',
    context.marksFailures ?? '',
    // The label too: a merged policy is `Directive[d]` on a node where it has one directive.
    mapList(context.dependencies, (dependency) => `${dependency.failedClass}=${dependency.label}`).join(','),
  ].join('\u0000');
}

export function policyContexts(
  policies: readonly FormedPolicy[],
  edges: readonly PolicyEdge[],
): Map<string, PolicyContext> {
  const byId = new Map(policies.map((policy) => [policy.id, policy]));
  const notifiers = new Set(edges.filter((edge) => edge.refresh).map((edge) => edge.from));
  const followed = new Set(edges.map((edge) => edge.from));
  const contexts = new Map<string, PolicyContext>();
  for (const policy of policies) {
    const refreshSources = mapList(
      edges.filter((edge) => edge.refresh && edge.to === policy.id),
      (edge) => repairedClass(byId.get(edge.from) as FormedPolicy),
    );
    contexts.set(policy.id, {
      refreshContext: refreshSources.length > 0 ? [...new Set(refreshSources)].sort().join('|') : undefined,
      marksRepairs: notifiers.has(policy.id) ? repairedClass(policy) : undefined,
      marksFailures: followed.has(policy.id) ? failedClass(policy) : undefined,
      dependencies: mapList([...precedingPolicies(policy.id, edges)].sort(), (id) => {
        const preceding = byId.get(id) as FormedPolicy;
        return { policyId: id, failedClass: failedClass(preceding), label: policyLabel(preceding) };
      }),
    });
  }
  return contexts;
}

/** The policies a policy follows by a path of edges (the graph is acyclic once ordered). */
export function precedingPolicies(policyId: string, edges: readonly PolicyEdge[]): Set<string> {
  return reachable(
    policyId,
    edges,
    (edge) => edge.to,
    (edge) => edge.from,
  );
}

/** The policies skipped when a policy fails: those that follow it by a path of edges. */
export function followingPolicies(policyId: string, edges: readonly PolicyEdge[]): Set<string> {
  return reachable(
    policyId,
    edges,
    (edge) => edge.from,
    (edge) => edge.to,
  );
}

function reachable(
  start: string,
  edges: readonly PolicyEdge[],
  near: (edge: PolicyEdge) => string,
  far: (edge: PolicyEdge) => string,
): Set<string> {
  const found = new Set<string>();
  const waiting = [start];
  for (let id = waiting.pop(); id !== undefined; id = waiting.pop())
    for (const edge of edges)
      if (near(edge) === id && far(edge) !== start && !found.has(far(edge))) {
        found.add(far(edge));
        waiting.push(far(edge));
      }
  return found;
}

/** A policy's files (path under the bundle root → content) and the inputs promises.cf lists. */
export interface RenderedPolicy {
  readonly files: readonly (readonly [string, string])[];
  readonly inputs: readonly string[];
  readonly bundle: string;
}

/** The bundle a policy is called by and the files promises.cf lists for it (values do not matter). */
export function policyLayout(policy: FormedPolicy): Omit<RenderedPolicy, 'files'> {
  const directory = `${policy.technique.id}/${policy.technique.version}`;
  const bundle = policyBundleName(policy);
  if (policy.kind === 'separated-with-parameters')
    return {
      bundle,
      inputs: [`${directory}/${parameterisedBundleName(policy)}.cf`, `${directory}/${bundle}.cf`],
    };
  return { bundle, inputs: [`${directory}/${bundle}.cf`] };
}

/** One directive's part of a policy to render: its values, and its policy mode (enforce if absent). */
export interface RenderInstance {
  readonly values: Readonly<Record<string, Json>>;
  readonly mode?: PolicyMode;
}

export function renderPolicy(
  policy: FormedPolicy,
  instances: readonly RenderInstance[],
  context: PolicyContext,
): RenderedPolicy {
  const { bundle, inputs } = policyLayout(policy);
  const header = auditHeader(policy, instances);
  if (policy.kind === 'separated-with-parameters') {
    const parameterised = parameterisedBundleName(policy);
    const parameters = mapList(policy.technique.parameters, (parameter) => parameter.name).sort();
    const promises = [
      ...promisesOf(policy, (name) => `$(${name})`, context, instances[0]?.mode ?? 'enforce'),
      ...skipReports(policy, context),
    ];
    const [parameterisedPath, callPath] = inputs as [string, string];
    const values = (instances[0] as RenderInstance).values;
    return {
      bundle,
      inputs,
      files: [
        [`${ROOT}/${parameterisedPath}`, header + renderAgentBundle(parameterised, parameters, promises)],
        [
          `${ROOT}/${callPath}`,
          renderMethodsCall(
            bundle,
            policy.drafts[0]?.directive.id ?? policy.id,
            parameterised,
            mapList(parameters, (name) => agentText(textOfValue(values[name] ?? ''), 2)),
          ),
        ],
      ],
    };
  }
  const promises: ConcretePromise[] = [];
  for (const instance of instances)
    for (const promise of promisesOf(
      policy,
      // A draft of another version than the policy's (a node failing on the conflict) lacks some.
      (name) => agentText(textOfValue(instance.values[name] ?? ''), 1),
      context,
      instance.mode ?? 'enforce',
    ))
      promises.push(promise);
  promises.push(...skipReports(policy, context));
  return {
    bundle,
    inputs,
    files: [[`${ROOT}/${inputs[0] as string}`, header + renderAgentBundle(bundle, [], promises)]],
  };
}

/** Names the directives in audit mode atop the policy's file: a human reads it, the hash covers it. */
function auditHeader(policy: FormedPolicy, instances: readonly RenderInstance[]): string {
  const audited = policy.drafts.filter((_draft, index) => instances[index]?.mode === 'audit');
  if (audited.length === 0) return '';
  return `# Audit mode (warns of what it would change, changes nothing): ${mapList(audited, (draft) => `Directive[${draft.directive.id}]`).join(', ')}\n`;
}

export const SYSTEM_INPUTS = ['system/policygen_lib.cf', 'system/policygen_system.cf'] as const;
export const SYSTEM_LIBRARY_FILE = `${ROOT}/system/policygen_lib.cf`;
export const SYSTEM_BUNDLES_FILE = `${ROOT}/system/policygen_system.cf`;
export const PROMISES_FILE = `${ROOT}/promises.cf`;
export const PROPERTIES_FILE = `${ROOT}/properties.d/properties.json`;
export const DIRECTIVES_CSV_FILE = `${ROOT}/rudder-directives.csv`;

/** promises.cf of a node whose policies render as given, in apply order. */
export function promisesCfOf(rendered: readonly Omit<RenderedPolicy, 'files'>[]): string {
  return quotedPromisesCfOf(mapList(rendered, quotedLayout));
}

/** A policy's inputs and bundle name, quoted for promises.cf. */
export interface QuotedLayout {
  readonly inputs: readonly string[];
  readonly bundle: string;
}

export function quotedLayout(layout: Omit<RenderedPolicy, 'files'>): QuotedLayout {
  return { inputs: mapList(layout.inputs, quote), bundle: quote(layout.bundle) };
}

const QUOTED_SYSTEM_INPUTS = mapList(SYSTEM_INPUTS, quote);
const QUOTED_SYSTEM_BUNDLES = mapList(SYSTEM_BUNDLES, quote);

const QUOTED_SYSTEM_INPUT_LIST = QUOTED_SYSTEM_INPUTS.join(', ');
const QUOTED_SYSTEM_BUNDLE_LIST = QUOTED_SYSTEM_BUNDLES.join(', ');

/** `renderQuotedPromisesCf` of the system inputs and bundles, then the layouts': built in one pass (once per plan). */
export function quotedPromisesCfOf(layouts: readonly QuotedLayout[]): string {
  let inputs = QUOTED_SYSTEM_INPUT_LIST;
  let bundles = QUOTED_SYSTEM_BUNDLE_LIST;
  for (const layout of layouts) {
    for (const input of layout.inputs) inputs += `, ${input}`;
    bundles += `, ${layout.bundle}`;
  }
  return renderQuotedPromisesCf([inputs], [bundles]);
}

/** properties.d/properties.json, written for `readjson` (see `agentJson`). */
export function propertiesFileOf(properties: JsonObject): string {
  return `${agentJson({ properties })}\n`;
}

/** Every file of an ok node's tree except the manifest, as path → content. */
export function renderNodeFiles(computation: NodeComputation, generatedAt: number): Map<string, string> {
  const files = new Map<string, string>();
  files.set(SYSTEM_LIBRARY_FILE, SYSTEM_LIBRARY);
  files.set(SYSTEM_BUNDLES_FILE, renderSystemBundles(computation.node));
  const contexts = policyContexts(computation.policies, computation.edges);
  const rendered = mapList(computation.policies, (policy) =>
    renderPolicy(
      policy,
      computation.instances.get(policy.id) ?? [],
      contexts.get(policy.id) as PolicyContext,
    ),
  );
  for (const policy of rendered) for (const [path, content] of policy.files) files.set(path, content);
  files.set(PROMISES_FILE, promisesCfOf(rendered));
  files.set(PROPERTIES_FILE, propertiesFileOf(computation.inherited.properties));
  files.set(DIRECTIVES_CSV_FILE, directivesCsv(computation.policies));
  files.set(GENERATED_AT_FILE, `${generatedAt}\n`);
  return files;
}

function promisesOf(
  policy: FormedPolicy,
  replacement: (name: string) => string,
  context: PolicyContext,
  mode: PolicyMode,
): ConcretePromise[] {
  const { refreshContext, dependencies } = context;
  // In audit nothing is repaired, and what would change is a warning the agent counts as a
  // failure (`repair_failed`): not one that skips what follows, nor a repair that notifies.
  const marksRepairs = mode === 'audit' ? undefined : context.marksRepairs;
  const marksFailures = mode === 'audit' ? undefined : context.marksFailures;
  const mark = (template: PromiseTemplate): PromiseTemplate => {
    if (mode === 'audit' && REPAIRING_TYPES.has(template.type))
      return {
        ...template,
        attributes: { ...template.attributes, action: { call: AUDIT_ACTION_BODY, args: [] } },
      };
    if ((!marksRepairs && !marksFailures) || !REPAIRING_TYPES.has(template.type)) return template;
    const own = ownOutcomeClasses(template.attributes['classes']);
    const repaired = [...own.repaired, ...(marksRepairs ? [marksRepairs] : [])];
    const failed = [...own.failed, ...(marksFailures ? [marksFailures] : [])];
    const classes =
      failed.length === 0 && repaired.length === 1
        ? { call: REPAIRED_CLASS_BODY, args: repaired }
        : { call: CLASSES_BODY, args: [repaired.join(','), failed.join(',')] };
    return { ...template, attributes: { ...template.attributes, classes } };
  };
  const promises = mapList(policy.technique.promises, (template) =>
    concretePromise(mark(template), replacement),
  );
  if (refreshContext) {
    promises.push(
      ...mapList(policy.technique.refresh, (template) =>
        concretePromise(mark(template), replacement, refreshContext),
      ),
    );
  }
  if (dependencies.length === 0) return promises;
  // Skipped, refresh included, when a policy it follows failed earlier in the run (§3.6).
  const skip = `!(${mapList(dependencies, (dependency) => dependency.failedClass).join('|')})`;
  return mapList(promises, (promise) => ({
    ...promise,
    context: promise.context === undefined ? skip : `(${promise.context}).${skip}`,
  }));
}

/** What the agent reports of a policy it skips, one line per failed policy it follows. */
function skipReports(policy: FormedPolicy, context: PolicyContext): ConcretePromise[] {
  const label = policyLabel(policy);
  return mapList(context.dependencies, (dependency) => ({
    type: 'reports',
    promiser: `${label}: Skipping because of failed dependencies (${dependency.label} failed)`,
    attributes: [],
    context: dependency.failedClass,
  }));
}

/** The classes a technique's own `classes` attribute sets (validation admits only these bodies). */
function ownOutcomeClasses(value: PromiseTemplate['attributes'][string] | undefined): {
  readonly repaired: readonly string[];
  readonly failed: readonly string[];
} {
  if (value === undefined || typeof value !== 'object' || Array.isArray(value))
    return { repaired: [], failed: [] };
  const listed = (text: string | undefined): string[] =>
    (text ?? '').split(',').filter((name) => name.trim() !== '');
  if (value.call === REPAIRED_CLASS_BODY) return { repaired: listed(value.args[0]), failed: [] };
  return { repaired: listed(value.args[0]), failed: listed(value.args[1]) };
}

/** One line per applied directive, in apply order: directive, rule, technique, version, policy. */
export function directivesCsv(policies: readonly FormedPolicy[]): string {
  return mapList(policies, directivesCsvLines).join('');
}

/** The lines of `rudder-directives.csv` one policy gives. */
export function directivesCsvLines(policy: FormedPolicy): string {
  const cell = (text: string): string => `"${text.replace(/"/g, '""')}"`;
  return mapList(
    policy.drafts,
    (draft) =>
      mapList(
        [draft.directive.id, draft.rule.id, policy.technique.id, policy.technique.version, policy.id],
        cell,
      ).join(',') + '\n',
  ).join('');
}
