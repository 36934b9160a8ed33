import type { Json, JsonObject } from '../model/json';
import { canonicalJson, isJsonObject } from '../model/json';
import { asData } from '../render/cfengine';
import { mapList } from '../model/lists';

/** What a directive's parameter values may refer to at generation time (semantics.md §5). */
export interface ExpansionContext {
  readonly properties: JsonObject;
  readonly parameters: Readonly<Record<string, Json>>;
  readonly nodeId: string;
  readonly hostname: string;
  readonly policyServerId: string;
}

/** A generation-time reference found in a text, with its place (`text.slice(start, end)`). */
interface FoundReference {
  readonly start: number;
  readonly end: number;
  readonly target: ParsedReference;
  /** `| default = "text"` (unescaped) or `| default = ${another reference}`, nested to any depth. */
  readonly fallback?: string | FoundReference;
}

const HEAD =
  /\$\{\s*(?:node\.properties((?:\[[^\]]*\])+)|rudder\.param\.([A-Za-z0-9_]+)|rudder\.node\.(id|hostname|policyserver\.id))\s*/y;
const DEFAULT = /\|\s*default\s*=\s*/y;
const QUOTED = /"((?:[^"\\]|\\.)*)"\s*/y;
const SPACES = /\s*/y;

function matchAt(pattern: RegExp, text: string, at: number): RegExpExecArray | null {
  pattern.lastIndex = at;
  return pattern.exec(text);
}

/** The reference starting at `at` (Rudder's syntax), or undefined when none does. */
function referenceAt(text: string, at: number): FoundReference | undefined {
  const head = matchAt(HEAD, text, at);
  if (!head) return undefined;
  const [, keys, param, nodeField] = head;
  const target: ParsedReference =
    keys !== undefined
      ? { path: propertyPath(keys) }
      : param !== undefined
        ? { param }
        : { nodeField: nodeField as string };
  let position = at + head[0].length;
  let fallback: string | FoundReference | undefined;
  const marker = matchAt(DEFAULT, text, position);
  if (marker) {
    position += marker[0].length;
    const quoted = matchAt(QUOTED, text, position);
    if (quoted) {
      fallback = (quoted[1] as string).replace(/\\(.)/g, '$1');
      position += quoted[0].length;
    } else {
      const nested = referenceAt(text, position);
      if (!nested) return undefined;
      fallback = nested;
      position = nested.end + (matchAt(SPACES, text, nested.end)?.[0].length ?? 0);
    }
  }
  if (text[position] !== '}') return undefined;
  return { start: at, end: position + 1, target, ...(fallback === undefined ? {} : { fallback }) };
}

/** Every generation-time reference of a text, outermost ones, in order; other `${...}` are the agent's. */
function referencesOfText(text: string): FoundReference[] {
  const found: FoundReference[] = [];
  for (let at = text.indexOf('${'); at !== -1;) {
    const reference = referenceAt(text, at);
    if (reference) found.push(reference);
    at = text.indexOf('${', reference ? reference.end : at + 2);
  }
  return found;
}

export interface ExpansionResult {
  readonly value: Json;
  /** References that resolved to nothing and had no default. */
  readonly unknown: readonly string[];
}

/** Expands every generation-time reference in every string of a value; `${...}` of the agent stay. */
export function expandReferences(value: Json, context: ExpansionContext): ExpansionResult {
  const unknown: string[] = [];
  // The text a reference stands for, or undefined when neither it nor its defaults resolve.
  const valueOf = (reference: FoundReference): string | undefined => {
    const resolved = resolveTarget(context, reference.target);
    // What a reference inserts is data: the agent must not expand it again (semantics.md §5).
    if (resolved !== undefined)
      return asData(typeof resolved === 'string' ? resolved : canonicalJson(resolved));
    if (reference.fallback === undefined) return undefined;
    return typeof reference.fallback === 'string' ? reference.fallback : valueOf(reference.fallback);
  };
  const expandText = (text: string): string => {
    const references = referencesOfText(text);
    if (references.length === 0) return text;
    let expanded = '';
    let from = 0;
    for (const reference of references) {
      const resolved = valueOf(reference);
      const written = text.slice(reference.start, reference.end);
      if (resolved === undefined) unknown.push(written);
      expanded += text.slice(from, reference.start) + (resolved ?? written);
      from = reference.end;
    }
    return expanded + text.slice(from);
  };
  const walk = (current: Json): Json => {
    if (typeof current === 'string') return expandText(current);
    if (Array.isArray(current)) return current.map(walk);
    if (isJsonObject(current))
      return Object.fromEntries(mapList(Object.entries(current), ([key, inner]) => [key, walk(inner)]));
    return current;
  };
  return { value: walk(value), unknown };
}

function resolveTarget(context: ExpansionContext, target: ParsedReference): Json | undefined {
  if ('path' in target) return propertyAt(context.properties, target.path);
  if ('param' in target) return resolveOther(context, target.param);
  return resolveOther(context, undefined, target.nodeField);
}

function propertyPath(keys: string): string[] {
  return mapList([...keys.matchAll(/\[([^\]]*)\]/g)], ([, key]) => (key as string).trim());
}

function propertyAt(properties: JsonObject, path: readonly string[]): Json | undefined {
  let current: Json | undefined = properties;
  for (const key of path) {
    if (!isJsonObject(current)) return undefined;
    current = current[key];
  }
  return current;
}

function resolveOther(context: ExpansionContext, param?: string, nodeField?: string): Json | undefined {
  if (param !== undefined) return context.parameters[param];
  if (nodeField === 'id') return context.nodeId;
  if (nodeField === 'hostname') return context.hostname;
  return context.policyServerId;
}

/** Whether a value holds a generation-time reference anywhere: its expansion depends on the node. */
export function hasGenerationReferences(value: Json): boolean {
  if (typeof value === 'string') return value.includes('${') && referencesOfText(value).length > 0;
  if (Array.isArray(value)) return value.some(hasGenerationReferences);
  if (isJsonObject(value)) return Object.values(value).some(hasGenerationReferences);
  return false;
}

/** A generation-time reference, parsed once: what its expansion reads. */
export type ParsedReference =
  { readonly path: readonly string[] } | { readonly param: string } | { readonly nodeField: string };

/** Every generation-time reference in every string of a value, defaults' included, in order. */
export function referencesIn(value: Json, into: ParsedReference[] = []): ParsedReference[] {
  if (typeof value === 'string') {
    if (!value.includes('${')) return into;
    for (let reference of referencesOfText(value)) {
      into.push(reference.target);
      while (reference.fallback !== undefined && typeof reference.fallback !== 'string') {
        reference = reference.fallback;
        into.push(reference.target);
      }
    }
  } else if (Array.isArray(value)) for (const item of value) referencesIn(item, into);
  else if (isJsonObject(value)) for (const item of Object.values(value)) referencesIn(item, into);
  return into;
}

/**
 * What the references read in a context, as text: values whose references read equal texts expand
 * equally (the expansion is a function of the value and of what its references resolve to).
 */
export function referencedValuesKey(
  references: readonly ParsedReference[],
  context: ExpansionContext,
): string {
  let key = '';
  for (const reference of references) {
    const resolved =
      'path' in reference
        ? propertyAt(context.properties, reference.path)
        : 'param' in reference
          ? resolveOther(context, reference.param)
          : resolveOther(context, undefined, reference.nodeField);
    key += resolved === undefined ? '\u0001\u0000' : `${canonicalJson(resolved)}\u0000`;
  }
  return key;
}
