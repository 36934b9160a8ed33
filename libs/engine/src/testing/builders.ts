import type { CompiledFleet } from '../lib/index/fleet-index';
import { compileFleet } from '../lib/index/fleet-index';
import { validateFleet } from '../lib/validation/validate';

type Entity = Record<string, unknown>;

/** A fleet file for tests: a node `n1` and nothing else unless given. */
export function fleetFile(parts: Partial<Record<string, unknown>>): Record<string, unknown> {
  return {
    techniques: [],
    directives: [],
    rules: [],
    groups: [],
    nodes: [{ id: 'n1', hostname: 'n1.example.com' }],
    ...parts,
  };
}

/** A multi-instance merged technique with one `vars` promise per instance (`v` = `{{value}}`). */
export function technique(id: string, extra: Entity = {}): Entity {
  return {
    id,
    version: '1.0',
    name: `Technique ${id}`,
    multiInstance: true,
    policyGeneration: 'merged',
    parameters: [{ name: 'value', required: true }],
    promises: [{ type: 'vars', promiser: 'v', attributes: { string: '{{value}}' } }],
    ...extra,
  };
}

export function directive(id: string, techniqueId: string, extra: Entity = {}): Entity {
  return { id, name: id, technique: techniqueId, parameters: { value: id }, ...extra };
}

export function rule(id: string, directives: string[], extra: Entity = {}): Entity {
  return { id, name: id, directives, targets: ['special:all'], ...extra };
}

export function compileValid(input: unknown): CompiledFleet {
  const result = validateFleet(input);
  if (!result.ok)
    throw new Error(`invalid test fleet:\n${result.issues.map((i) => `${i.path}: ${i.message}`).join('\n')}`);
  return compileFleet(result.fleet);
}
