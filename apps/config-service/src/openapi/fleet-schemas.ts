import type { SchemaObject } from '@nestjs/swagger';
import { FLEET_COLLECTIONS, settingsSchema } from '@policygen/engine';
import type { FleetCollection } from '@policygen/engine';
import { z } from 'zod';

/** The component name of each collection's entity schema. */
export const ENTITY_SCHEMA_NAMES: Readonly<Record<FleetCollection, string>> = {
  techniques: 'Technique',
  directives: 'Directive',
  relationships: 'Relationship',
  rules: 'Rule',
  groups: 'Group',
  nodes: 'Node',
  relays: 'Relay',
};

const COMPONENTS = '#/components/schemas/';
/** Where zod puts the schemas that several entities share (the recursive JSON value and target). */
const SHARED = `${COMPONENTS}__shared#/$defs/`;

/**
 * The fleet format's schemas as OpenAPI components, from the engine's zod schemas, so the
 * document cannot drift from what the validator accepts. Request side: defaults make fields optional.
 */
export function fleetSchemas(): Record<string, SchemaObject> {
  const registry = z.registry<{ id: string }>();
  for (const [collection, schema] of Object.entries(FLEET_COLLECTIONS))
    registry.add(schema, { id: ENTITY_SCHEMA_NAMES[collection as FleetCollection] });
  registry.add(settingsSchema, { id: 'Settings' });
  const { schemas } = z.toJSONSchema(registry, {
    io: 'input',
    uri: (id) => `${COMPONENTS}${id}`,
    unrepresentable: 'any',
  });

  const components: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(schemas)) {
    const { $id: _id, $defs, ...rest } = schema as Record<string, unknown>;
    if (name === '__shared') {
      for (const [part, definition] of Object.entries(($defs ?? {}) as Record<string, unknown>))
        components[sharedName(part)] = definition;
    } else {
      components[name] = rest;
    }
  }
  return relinked(components) as Record<string, SchemaObject>;
}

function sharedName(part: string): string {
  return `Shared_${part}`;
}

/** Points the references into zod's shared definitions at their own components. */
function relinked(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relinked);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith(SHARED)
        ? `${COMPONENTS}${sharedName(inner.slice(SHARED.length))}`
        : relinked(inner),
    ]),
  );
}
