import { createHash } from 'node:crypto';
import type { AgentPromiseType, AttributeValue, PromiseTemplate } from '../model/fleet';
import { AGENT_PROMISE_TYPES } from '../model/fleet';
import type { Json } from '../model/json';
import { canonicalJson } from '../model/json';
import { mapList } from '../model/lists';

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

/**
 * Stands for each `$` of what a generation-time reference inserted (a property, a parameter, a
 * hostname) until it is rendered. A Unicode noncharacter: validation refuses it in the input.
 */
export const DATA_DOLLAR = '\uFDD0';

/** Marks a text as data: the agent must read it as it is, never as variable references. */
export function asData(text: string): string {
  return text.includes('$') ? text.replaceAll('$', DATA_DOLLAR) : text;
}

/** A text with its data marks turned back into `$` (what explain shows). */
export function withoutDataMarks(text: string): string {
  return text.includes(DATA_DOLLAR) ? text.replaceAll(DATA_DOLLAR, '$') : text;
}

/**
 * A value's text as the agent must see it once it has expanded it `expansions` times (1 where a
 * promise uses it, 2 through a bundle parameter): `$(` and `${` of data, and those of the
 * directive's own text that are no variable reference (unclosed, or empty: CFEngine mangles them,
 * `$( 5` into `$()5`), are written with `$(const.dollar)`, once more per further expansion.
 * Other references stay for the agent, as the directive wrote them.
 */
export function agentText(text: string, expansions: 1 | 2): string {
  if (!text.includes('$') && !text.includes(DATA_DOLLAR)) return text;
  const dollar = `$(const.dollar)${'(const.dollar)'.repeat(expansions - 1)}`;
  let written = '';
  for (let at = 0; at < text.length; at++) {
    const character = text[at] as string;
    const opening = text[at + 1];
    const startsReference = opening === '(' || opening === '{';
    if (character === DATA_DOLLAR) written += startsReference ? dollar : '$';
    else if (character === '$' && startsReference && !closesReference(text, at + 1)) written += dollar;
    else written += character;
  }
  return written;
}

/** Whether the bracket at `open` is closed further on, around something (CFEngine's own test). */
function closesReference(text: string, open: number): boolean {
  const opening = text[open] as string;
  const closing = opening === '(' ? ')' : '}';
  let depth = 0;
  for (let at = open; at < text.length; at++) {
    if (text[at] === opening) depth++;
    else if (text[at] === closing && --depth === 0) return at > open + 1;
  }
  return false;
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
  const attributes = mapList(
    Object.entries(template.attributes),
    ([name, value]): [string, AttributeValue] => {
      if (typeof value === 'string') return [name, substitute(value, replacement)];
      if (Array.isArray(value)) return [name, mapList(value, (item) => substitute(item, replacement))];
      if (typeof value === 'object')
        return [
          name,
          { call: value.call, args: mapList(value.args, (item) => substitute(item, replacement)) },
        ];
      return [name, value];
    },
  );
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
  if (Array.isArray(value)) return `{ ${mapList(value, quote).join(', ')} }`;
  return `${value.call}(${mapList(value.args, quote).join(', ')})`;
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
    `      ${quote(label)} usebundle => ${target}(${mapList(args, quote).join(', ')});`,
    '}',
    '',
  ].join('\n');
}

export function renderPromisesCf(inputs: readonly string[], bundlesequence: readonly string[]): string {
  return renderQuotedPromisesCf(mapList(inputs, quote), mapList(bundlesequence, quote));
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
/** Sets comma-separated lists of classes: when the promise is repaired, and when it fails. */
export const CLASSES_BODY = 'policygen_classes';
/** The `classes` bodies a technique's promise may call: the generated tree defines no others. */
export const TECHNIQUE_CLASSES_BODIES = [REPAIRED_CLASS_BODY, CLASSES_BODY] as const;
export const SYSTEM_BUNDLES = ['policygen_node', 'policygen_properties', 'node'] as const;
/** The action of every promise of a directive in audit mode: warn of what would change, change nothing. */
export const AUDIT_ACTION_BODY = 'policygen_audit';

export const SYSTEM_LIBRARY = [
  '# Bodies the generated policies use; no other library is needed.',
  `body classes ${REPAIRED_CLASS_BODY}(class)`,
  '{',
  '      promise_repaired => { "$(class)" };',
  '}',
  '',
  `body classes ${CLASSES_BODY}(repaired, failed)`,
  '{',
  '      promise_repaired => splitstring("$(repaired)", ",", "1000");',
  '      repair_failed => splitstring("$(failed)", ",", "1000");',
  '      repair_denied => splitstring("$(failed)", ",", "1000");',
  '      repair_timeout => splitstring("$(failed)", ",", "1000");',
  '}',
  '',
  `body action ${AUDIT_ACTION_BODY}`,
  '{',
  '      action_policy => "warn";',
  '}',
  '',
].join('\n');

/** Where a node's own property files are read from, after the tree's (Rudder's place). */
export const LOCAL_PROPERTIES_DIRECTORY = '/var/rudder/local/properties.d';

/**
 * Node identity, and `node.<namespace>` properties (semantics.md §5): every `*.json` file of the
 * tree's `properties.d/` in lexical order, then every one of the local override directory (an
 * augments file may name another one, `def.policygen_local_properties_dir`: tests do), merged at
 * the first level of each namespace: a key of a later file replaces the same key whole. A file
 * that is not JSON is left out; namespaces are the first-level keys that are names.
 *
 * CFEngine cannot loop, so the merge is written as promises iterating over lists, each iteration
 * merging one more file into what the previous ones made (a variable redefined in list order).
 */
export function renderSystemBundles(node: { id: string; hostname: string; policyServer: string }): string {
  return [
    'bundle common policygen_node',
    '{',
    '  vars:',
    `      "id" string => ${quote(node.id)};`,
    // Validation refuses a `$` in a hostname: a variable's value is expanded at each use.
    `      "hostname" string => ${quote(node.hostname)};`,
    `      "policy_server" string => ${quote(node.policyServer)};`,
    '}',
    '',
    'bundle common policygen_properties',
    '{',
    '  vars:',
    '      "tree_dir" string => "$(this.promise_dirname)/../properties.d";',
    `      "local_dir" string => ${quote(LOCAL_PROPERTIES_DIRECTORY)},`,
    '        unless => isvariable("def.policygen_local_properties_dir");',
    '      "local_dir" string => "$(def.policygen_local_properties_dir)",',
    '        if => isvariable("def.policygen_local_properties_dir");',
    '      "tree" slist => sort(findfiles("$(tree_dir)/*.json"), "lex");',
    '      "local" slist => sort(findfiles("$(local_dir)/*.json"), "lex");',
    '      # Position 0 is no file: the files are 1..count-1 (expandrange counts from 1 to count).',
    '      "files" slist => { "", @(tree), @(local) };',
    '      "count" int => length("files");',
    '      "positions" slist => filter("$(count)", expandrange("[1-$(count)]", "1"), "false", "true", "100000");',
    '      "file_$(positions)" data => readjson(nth("files", "$(positions)"), "100000000");',
    '      "every" data => parsejson("{}");',
    '      "every" data => mergedata("every", "file_$(positions)");',
    '      "namespaces" slist => filter("[a-zA-Z0-9][a-zA-Z0-9_]*", getindices("every"), "true", "false", "100000");',
    '}',
    '',
    'bundle common node',
    '{',
    '  vars:',
    '      "$(policygen_properties.namespaces)" data => parsejson("{}");',
    '      "$(policygen_properties.namespaces)" data => mergedata("$(policygen_properties.namespaces)", "policygen_properties.file_$(policygen_properties.positions)[$(policygen_properties.namespaces)]");',
    '}',
    '',
  ].join('\n');
}
