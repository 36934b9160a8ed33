import type { FormedPolicy } from '../merge/policies';
import type { AgentPromiseType, PromiseTemplate } from '../model/fleet';
import type { Json, JsonObject } from '../model/json';
import { isJsonObject } from '../model/json';
import type { NodeComputation, ResolvedInstance } from '../generate/compute-node';
import type { ConcretePromise } from './cfengine';
import {
  cfIdentifier,
  concretePromise,
  REPAIRED_CLASS_BODY,
  renderAgentBundle,
  renderMethodsCall,
  renderPromisesCf,
  renderSystemBundles,
  SYSTEM_BUNDLES,
  SYSTEM_LIBRARY,
  textOfValue,
} from './cfengine';

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

/** Every file of an ok node's tree except the manifest, as path → content. */
export function renderNodeFiles(computation: NodeComputation, generatedAt: number): Map<string, string> {
  const files = new Map<string, string>();
  const inputs = ['system/policygen_lib.cf', 'system/policygen_system.cf'];
  const sequence: string[] = [...SYSTEM_BUNDLES];
  files.set(`${ROOT}/system/policygen_lib.cf`, SYSTEM_LIBRARY);
  files.set(`${ROOT}/system/policygen_system.cf`, renderSystemBundles(computation.node));

  const byId = new Map(computation.policies.map((policy) => [policy.id, policy]));
  const notifiers = new Set(computation.edges.filter((edge) => edge.refresh).map((edge) => edge.from));
  for (const policy of computation.policies) {
    const directory = `${policy.technique.id}/${policy.technique.version}`;
    const bundle = policyBundleName(policy);
    const instances = computation.instances.get(policy.id) ?? [];
    const refreshSources = computation.edges
      .filter((edge) => edge.refresh && edge.to === policy.id)
      .map((edge) => repairedClass(byId.get(edge.from) as FormedPolicy));
    const refreshContext =
      refreshSources.length > 0 ? [...new Set(refreshSources)].sort().join('|') : undefined;
    const marksRepairs = notifiers.has(policy.id) ? repairedClass(policy) : undefined;

    if (policy.kind === 'separated-with-parameters') {
      const parameterised = parameterisedBundleName(policy);
      const parameters = policy.technique.parameters.map((parameter) => parameter.name).sort();
      const promises = promisesOf(policy, (name) => `$(${name})`, refreshContext, marksRepairs);
      const parameterisedPath = `${directory}/${parameterised}.cf`;
      files.set(`${ROOT}/${parameterisedPath}`, renderAgentBundle(parameterised, parameters, promises));
      inputs.push(parameterisedPath);
      const values = (instances[0] as ResolvedInstance).values;
      const callPath = `${directory}/${bundle}.cf`;
      files.set(
        `${ROOT}/${callPath}`,
        renderMethodsCall(
          bundle,
          policy.drafts[0]?.directive.id ?? policy.id,
          parameterised,
          parameters.map((name) => textOfValue(values[name] as Json)),
        ),
      );
      inputs.push(callPath);
    } else {
      const promises = instances.flatMap((instance) =>
        promisesOf(
          policy,
          (name) => textOfValue(instance.values[name] as Json),
          refreshContext,
          marksRepairs,
        ),
      );
      const path = `${directory}/${bundle}.cf`;
      files.set(`${ROOT}/${path}`, renderAgentBundle(bundle, [], promises));
      inputs.push(path);
    }
    sequence.push(bundle);
  }

  files.set(`${ROOT}/promises.cf`, renderPromisesCf(inputs, sequence));
  files.set(
    `${ROOT}/properties.d/properties.json`,
    `${prettyCanonicalJson({ properties: computation.inherited.properties })}\n`,
  );
  files.set(`${ROOT}/rudder-directives.csv`, directivesCsv(computation));
  files.set(GENERATED_AT_FILE, `${generatedAt}\n`);
  return files;
}

function promisesOf(
  policy: FormedPolicy,
  replacement: (name: string) => string,
  refreshContext: string | undefined,
  marksRepairs: string | undefined,
): ConcretePromise[] {
  const mark = (template: PromiseTemplate): PromiseTemplate => {
    if (!marksRepairs || !REPAIRING_TYPES.has(template.type) || 'classes' in template.attributes)
      return template;
    return {
      ...template,
      attributes: { ...template.attributes, classes: { call: REPAIRED_CLASS_BODY, args: [marksRepairs] } },
    };
  };
  const promises = policy.technique.promises.map((template) => concretePromise(mark(template), replacement));
  if (refreshContext) {
    promises.push(
      ...policy.technique.refresh.map((template) =>
        concretePromise(mark(template), replacement, refreshContext),
      ),
    );
  }
  return promises;
}

/** One line per applied directive, in apply order: directive, rule, technique, version, policy. */
function directivesCsv(computation: NodeComputation): string {
  const cell = (text: string): string => `"${text.replace(/"/g, '""')}"`;
  return computation.policies
    .flatMap((policy) =>
      policy.drafts.map(
        (draft) =>
          [draft.directive.id, draft.rule.id, policy.technique.id, policy.technique.version, policy.id]
            .map(cell)
            .join(',') + '\n',
      ),
    )
    .join('');
}

export function prettyCanonicalJson(value: Json): string {
  return JSON.stringify(sortKeys(value), null, 2);
}

function sortKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isJsonObject(value)) {
    const sorted: JsonObject = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeys(value[key] as Json);
    return sorted;
  }
  return value;
}
