import type { Json, JsonObject } from '../model/json';
import { canonicalJson, isJsonObject } from '../model/json';

/** What a directive's parameter values may refer to at generation time (semantics.md §5). */
export interface ExpansionContext {
  readonly properties: JsonObject;
  readonly parameters: Readonly<Record<string, Json>>;
  readonly nodeId: string;
  readonly hostname: string;
  readonly policyServerId: string;
}

const REFERENCE =
  /\$\{\s*(node\.properties((?:\[[^\]]*\])+)|rudder\.param\.([A-Za-z0-9_]+)|rudder\.node\.(id|hostname|policyserver\.id))\s*(?:\|\s*default\s*=\s*"((?:[^"\\]|\\.)*)"\s*)?\}/g;

export interface ExpansionResult {
  readonly value: Json;
  /** References that resolved to nothing and had no default. */
  readonly unknown: readonly string[];
}

/** Expands every generation-time reference in every string of a value; `${...}` of the agent stay. */
export function expandReferences(value: Json, context: ExpansionContext): ExpansionResult {
  const unknown: string[] = [];
  const expandText = (text: string): string =>
    text.replace(
      REFERENCE,
      (reference: string, _whole, keys?: string, param?: string, nodeField?: string, fallback?: string) => {
        const resolved = resolve(context, keys, param, nodeField);
        if (resolved !== undefined) return typeof resolved === 'string' ? resolved : canonicalJson(resolved);
        if (fallback !== undefined) return fallback.replace(/\\(.)/g, '$1');
        unknown.push(reference);
        return reference;
      },
    );
  const walk = (current: Json): Json => {
    if (typeof current === 'string') return expandText(current);
    if (Array.isArray(current)) return current.map(walk);
    if (isJsonObject(current))
      return Object.fromEntries(Object.entries(current).map(([key, inner]) => [key, walk(inner)]));
    return current;
  };
  return { value: walk(value), unknown };
}

function resolve(
  context: ExpansionContext,
  keys?: string,
  param?: string,
  nodeField?: string,
): Json | undefined {
  if (keys !== undefined) return propertyAt(context.properties, propertyPath(keys));
  return resolveOther(context, param, nodeField);
}

function propertyPath(keys: string): string[] {
  return [...keys.matchAll(/\[([^\]]*)\]/g)].map(([, key]) => (key as string).trim());
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
  if (typeof value === 'string') {
    REFERENCE.lastIndex = 0;
    return REFERENCE.test(value);
  }
  if (Array.isArray(value)) return value.some(hasGenerationReferences);
  if (isJsonObject(value)) return Object.values(value).some(hasGenerationReferences);
  return false;
}

/** A generation-time reference, parsed once: what its expansion reads. */
export type ParsedReference =
  { readonly path: readonly string[] } | { readonly param: string } | { readonly nodeField: string };

/** Every generation-time reference in every string of a value, in order. */
export function referencesIn(value: Json, into: ParsedReference[] = []): ParsedReference[] {
  if (typeof value === 'string') {
    // matchAll starts where the shared expression's last `test` left it.
    REFERENCE.lastIndex = 0;
    for (const [, , keys, param, nodeField] of value.matchAll(REFERENCE)) {
      if (keys !== undefined) into.push({ path: propertyPath(keys) });
      else if (param !== undefined) into.push({ param });
      else into.push({ nodeField: nodeField as string });
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
