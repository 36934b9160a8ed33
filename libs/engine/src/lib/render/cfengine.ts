import { createHash } from 'node:crypto';
import type { AgentPromiseType, AttributeValue, PromiseTemplate } from '../model/fleet';
import { AGENT_PROMISE_TYPES } from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson } from '../model/json';

/** A value as the body of a CFEngine double-quoted string; `$(...)`/`${...}` stay for the agent. */
export function escapeCfString(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
}

export function quote(text: string): string {
  return `"${escapeCfString(text)}"`;
}

/**
 * A CFEngine identifier for an id: ids made of letters, digits and `_` stay as they are; any other
 * id has its other characters turned to `_` and the first 8 hex digits of its SHA-256 appended,
 * so that `a-b` and `a_b` stay apart (`a_b_<hash>` and `a_b`).
 */
export function cfIdentifier(id: string): string {
  if (/^[A-Za-z0-9_]+$/.test(id)) return id;
  let identifier = sanitised.get(id);
  if (identifier === undefined) {
    identifier = `${id.replace(/[^A-Za-z0-9_]/g, '_')}_${createHash('sha256').update(id).digest('hex').slice(0, 8)}`;
    // A memo of a pure function, bounded: clearing it changes nothing but speed.
    if (sanitised.size >= 100_000) sanitised.clear();
    sanitised.set(id, identifier);
  }
  return identifier;
}

const sanitised = new Map<string, string>();

export function textOfValue(value: Json): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}

const TEMPLATE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** Replaces `{{parameter}}` with its text; the caller escapes the whole for CFEngine. */
export function substitute(template: string, replacement: (name: string) => string): string {
  return template.replace(TEMPLATE, (_match, name: string) => replacement(name));
}

/** A promise with every template substituted: ready to print. */
export interface ConcretePromise {
  readonly type: AgentPromiseType;
  readonly promiser: string;
  readonly attributes: readonly (readonly [string, AttributeValue])[];
  /** Class expression guarding the promise; undefined: always. */
  readonly context?: string;
}

export function concretePromise(
  template: PromiseTemplate,
  replacement: (name: string) => string,
  context?: string,
): ConcretePromise {
  const attributes = Object.entries(template.attributes).map(([name, value]): [string, AttributeValue] => {
    if (typeof value === 'string') return [name, substitute(value, replacement)];
    if (Array.isArray(value)) return [name, value.map((item) => substitute(item, replacement))];
    if (typeof value === 'object')
      return [name, { call: value.call, args: value.args.map((item) => substitute(item, replacement)) }];
    return [name, value];
  });
  return {
    type: template.type,
    promiser: substitute(template.promiser, replacement),
    attributes,
    ...(context === undefined ? {} : { context }),
  };
}

function renderAttributeValue(value: AttributeValue): string {
  if (typeof value === 'string') return quote(value);
  if (typeof value === 'number' || typeof value === 'boolean') return quote(String(value));
  if (Array.isArray(value)) return `{ ${value.map(quote).join(', ')} }`;
  return `${value.call}(${value.args.map(quote).join(', ')})`;
}

/**
 * An agent bundle with its promises grouped by type in normal order (seed 003), declaration order
 * kept within a type; guarded promises come after the unguarded ones of their type.
 */
export function renderAgentBundle(
  name: string,
  parameters: readonly string[],
  promises: readonly ConcretePromise[],
): string {
  const lines = [`bundle agent ${name}${parameters.length > 0 ? `(${parameters.join(', ')})` : ''}`, '{'];
  for (const type of AGENT_PROMISE_TYPES) {
    const ofType = promises.filter((promise) => promise.type === type);
    if (ofType.length === 0) continue;
    lines.push(`  ${type}:`);
    const unguarded = ofType.filter((promise) => promise.context === undefined);
    const guarded = ofType.filter((promise) => promise.context !== undefined);
    for (const promise of unguarded) lines.push(...renderPromise(promise));
    let context: string | undefined;
    for (const promise of guarded) {
      if (promise.context !== context) {
        context = promise.context;
        lines.push(`    ${context}::`);
      }
      lines.push(...renderPromise(promise));
    }
  }
  lines.push('}', '');
  return lines.join('\n');
}

function renderPromise(promise: ConcretePromise): string[] {
  if (promise.attributes.length === 0) return [`      ${quote(promise.promiser)};`];
  const lines = [`      ${quote(promise.promiser)}`];
  promise.attributes.forEach(([name, value], index) => {
    lines.push(
      `        ${name} => ${renderAttributeValue(value)}${index === promise.attributes.length - 1 ? ';' : ','}`,
    );
  });
  return lines;
}

export function renderMethodsCall(
  name: string,
  label: string,
  target: string,
  args: readonly string[],
): string {
  return [
    `bundle agent ${name}`,
    '{',
    '  methods:',
    `      ${quote(label)} usebundle => ${target}(${args.map(quote).join(', ')});`,
    '}',
    '',
  ].join('\n');
}

export function renderPromisesCf(inputs: readonly string[], bundlesequence: readonly string[]): string {
  return renderQuotedPromisesCf(inputs.map(quote), bundlesequence.map(quote));
}

/** promises.cf from inputs and bundle names quoted already (a policy's are quoted once, not per node). */
export function renderQuotedPromisesCf(inputs: readonly string[], bundlesequence: readonly string[]): string {
  return [
    'body common control',
    '{',
    `    inputs => { ${inputs.join(', ')} };`,
    `    bundlesequence => { ${bundlesequence.join(', ')} };`,
    '}',
    '',
  ].join('\n');
}

export const REPAIRED_CLASS_BODY = 'policygen_if_repaired';
export const SYSTEM_BUNDLES = ['policygen_node', 'node'] as const;

export const SYSTEM_LIBRARY = [
  '# Bodies the generated policies use; no other library is needed.',
  `body classes ${REPAIRED_CLASS_BODY}(class)`,
  '{',
  '      promise_repaired => { "$(class)" };',
  '}',
  '',
].join('\n');

/**
 * Node identity and `node.<namespace>` properties: properties.d/properties.json, then the node's
 * local override file, merged at the first level of the `properties` namespace (semantics.md §5).
 */
export function renderSystemBundles(node: { id: string; hostname: string; policyServer: string }): string {
  return [
    'bundle common policygen_node',
    '{',
    '  vars:',
    `      "id" string => ${quote(node.id)};`,
    `      "hostname" string => ${quote(node.hostname)};`,
    `      "policy_server" string => ${quote(node.policyServer)};`,
    '}',
    '',
    'bundle common node',
    '{',
    '  classes:',
    '      "policygen_local_properties" expression => fileexists("/var/rudder/local/properties.d/properties.json");',
    '  vars:',
    '      "generated" data => readjson("$(this.promise_dirname)/../properties.d/properties.json", 100000000);',
    '    !policygen_local_properties::',
    '      "properties" data => mergedata("generated[properties]");',
    '    policygen_local_properties::',
    '      "local" data => readjson("/var/rudder/local/properties.d/properties.json", 100000000);',
    '      "properties" data => mergedata("generated[properties]", "local[properties]");',
    '}',
    '',
  ].join('\n');
}
