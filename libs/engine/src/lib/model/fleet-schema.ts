import { z } from 'zod';
import { FLEET_COLLECTIONS, settingsSchema } from './fleet';

export const FLEET_SCHEMA_ID = 'https://policygen.dev/schemas/fleet.schema.json';

/**
 * The fleet file (fleet-format.md and the project's additions, `docs/fleet-format.md`) as one zod
 * schema of its shape: what an editor or another tool can check before policygen sees the file.
 * References between entities, duplicate ids, cycles and CFEngine's limits are the validator's:
 * a file this schema accepts may still be invalid, never the other way round.
 */
const fleetFileSchema = z.strictObject({
  settings: settingsSchema.optional(),
  parameters: z.record(z.string(), z.json()).optional(),
  techniques: z.array(FLEET_COLLECTIONS.techniques).optional(),
  directives: z.array(FLEET_COLLECTIONS.directives).optional(),
  relationships: z.array(FLEET_COLLECTIONS.relationships).optional(),
  rules: z.array(FLEET_COLLECTIONS.rules).optional(),
  groups: z.array(FLEET_COLLECTIONS.groups).optional(),
  nodes: z.array(FLEET_COLLECTIONS.nodes).optional(),
  relays: z.array(FLEET_COLLECTIONS.relays).optional(),
});

/** The JSON Schema (draft 2020-12) of a fleet file as written: defaults make fields optional. */
export function fleetJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(fleetFileSchema, { io: 'input', unrepresentable: 'any' });
  return {
    $schema: schema['$schema'],
    $id: FLEET_SCHEMA_ID,
    title: 'Policygen fleet file',
    description:
      'One configuration: settings, global parameters, techniques, directives, relationships, rules, groups, nodes and relays. ' +
      'The shape only: references between entities, duplicate ids and cycles are checked by `policygen validate`.',
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema')),
  };
}
