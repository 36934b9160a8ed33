import type { TechniqueInput } from '../fleet-file';
import { mulberry32 } from '../random';
import type { BenchSizes } from './sizes';
import { integerBetween, mixSeed, pad, picker, STREAMS } from './sizes';

/**
 * What a directive may put in a parameter. `ident` values end up in promisers, class and variable
 * names, so they stay identifiers; only `text` values may carry generation-time references.
 */
export type ParameterKind =
  'ident' | 'text' | 'uid' | 'path' | 'schedule' | 'package-state' | 'service-state';

export interface BenchParameter {
  readonly name: string;
  readonly kind: ParameterKind;
  readonly required: boolean;
}

export type Generation = 'unique' | 'merged' | 'separated' | 'separated-with-parameters';

export type Archetype =
  'variable' | 'config_file' | 'package' | 'service' | 'directory' | 'cron' | 'flag' | 'list' | 'user';

/** A technique of the fleet with what the directive builder needs to fill its parameters. */
export interface BenchTechnique {
  readonly index: number;
  readonly id: string;
  readonly archetype: Archetype;
  readonly generation: Generation;
  readonly versions: readonly string[];
  readonly parameters: readonly BenchParameter[];
  readonly inputs: readonly TechniqueInput[];
}

type Promises = NonNullable<TechniqueInput['promises']>;

interface ArchetypeShape {
  readonly parameters: readonly (BenchParameter & { readonly default?: string })[];
  readonly promises: (prefix: string) => Promises;
  readonly refresh?: (prefix: string) => Promises;
}

const verbose = (): { if: string } => ({ if: 'policygen_verbose' });
const line = (text: string): { call: string; args: string[] } => ({
  call: 'concat',
  args: [text, '$(const.n)'],
});

/**
 * The promise shapes, after the demo's techniques that `cf-promises` accepts: string and slist
 * attributes, built-in functions only, no body or bundle the generated tree would not define.
 */
const ARCHETYPES: Readonly<Record<Archetype, ArchetypeShape>> = {
  variable: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'value', kind: 'text', required: true },
    ],
    promises: (prefix) => [
      { type: 'vars', promiser: `${prefix}_{{name}}`, attributes: { string: '{{value}}' } },
    ],
  },
  config_file: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'content', kind: 'text', required: true },
    ],
    promises: (prefix) => [
      {
        type: 'files',
        promiser: `/etc/bench/${prefix}/{{name}}.conf`,
        attributes: { create: 'true', content: line('{{content}}') },
      },
    ],
  },
  package: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'state', kind: 'package-state', required: false, default: 'present' },
      { name: 'comment', kind: 'text', required: false, default: '' },
    ],
    promises: (prefix) => [
      { type: 'vars', promiser: `${prefix}_packages[{{name}}]`, attributes: { string: '{{state}}' } },
      { type: 'reports', promiser: 'Package {{name}} must be {{state}} {{comment}}', attributes: verbose() },
    ],
  },
  service: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'state', kind: 'service-state', required: false, default: 'running' },
      { name: 'comment', kind: 'text', required: false, default: '' },
    ],
    promises: (prefix) => [
      {
        type: 'processes',
        promiser: '{{name}}',
        attributes: { restart_class: `${prefix}_restart_{{name}}` },
      },
      { type: 'commands', promiser: '/bin/true', attributes: { if: `${prefix}_restart_{{name}}` } },
      { type: 'reports', promiser: 'Service {{name}} must be {{state}} {{comment}}', attributes: verbose() },
    ],
    refresh: () => [{ type: 'commands', promiser: '/bin/true', attributes: { if: 'linux' } }],
  },
  directory: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'purpose', kind: 'text', required: false, default: 'bench' },
    ],
    promises: (prefix) => [
      { type: 'files', promiser: `/var/lib/bench/${prefix}/{{name}}/.`, attributes: { create: 'true' } },
      { type: 'reports', promiser: 'Directory {{name}}: {{purpose}}', attributes: verbose() },
    ],
  },
  cron: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'command', kind: 'text', required: true },
      { name: 'schedule', kind: 'schedule', required: false, default: '17 3 * * *' },
      { name: 'user', kind: 'ident', required: false, default: 'root' },
    ],
    promises: (prefix) => [
      {
        type: 'files',
        promiser: `/etc/cron.d/${prefix}_{{name}}`,
        attributes: { create: 'true', content: line('{{schedule}} {{user}} {{command}}') },
      },
    ],
  },
  flag: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'path', kind: 'text', required: true },
    ],
    promises: (prefix) => [
      {
        type: 'classes',
        promiser: `${prefix}_{{name}}`,
        attributes: { expression: { call: 'fileexists', args: ['{{path}}'] } },
      },
      { type: 'reports', promiser: 'Flag {{name}} is set', attributes: { if: `${prefix}_{{name}}` } },
    ],
  },
  list: {
    parameters: [
      { name: 'name', kind: 'ident', required: true },
      { name: 'first', kind: 'text', required: true },
      { name: 'second', kind: 'text', required: false, default: 'none' },
    ],
    promises: (prefix) => [
      { type: 'vars', promiser: `${prefix}_{{name}}`, attributes: { slist: ['{{first}}', '{{second}}'] } },
    ],
  },
  user: {
    parameters: [
      { name: 'login', kind: 'ident', required: true },
      { name: 'uid', kind: 'uid', required: true },
      { name: 'description', kind: 'text', required: false, default: '' },
      { name: 'shell', kind: 'path', required: false, default: '/bin/bash' },
    ],
    promises: () => [
      {
        type: 'users',
        promiser: '{{login}}',
        attributes: { policy: 'present', uid: '{{uid}}', shell: '{{shell}}', description: '{{description}}' },
      },
    ],
  },
};

/** Archetypes each generation is written with (users, for one, are one policy per account). */
const ARCHETYPES_OF: Readonly<Record<Generation, readonly Archetype[]>> = {
  unique: ['variable', 'config_file', 'package', 'service', 'directory', 'cron', 'flag'],
  merged: ['variable', 'package', 'service', 'directory', 'list', 'config_file', 'flag'],
  separated: ['config_file', 'cron', 'user', 'directory', 'service', 'flag'],
  'separated-with-parameters': ['config_file', 'cron', 'user', 'directory', 'flag'],
};

const pickGeneration = picker<Generation>([
  ['unique', 20],
  ['merged', 40],
  ['separated', 25],
  ['separated-with-parameters', 15],
]);

/**
 * The techniques: a mix of unique, merged, separated and separated-with-parameters, 2 to 6
 * parameters each (free-text `note` parameters fill up to the drawn count). About 8% come in two
 * versions — only unique and separated ones: a node may mix their versions, whereas two versions
 * of a merged technique on one node is an error.
 */
export function benchTechniques(sizes: BenchSizes): BenchTechnique[] {
  const random = mulberry32(mixSeed(sizes.seed, STREAMS.techniques));
  const techniques: BenchTechnique[] = [];
  for (let index = 0; index < sizes.techniques; index++) {
    // The first ones cover every generation, so that even a small fleet has each kind.
    const generation =
      index < 4
        ? ((['merged', 'separated', 'unique', 'separated-with-parameters'] as const)[index] as Generation)
        : pickGeneration(random);
    const choices = ARCHETYPES_OF[generation];
    const archetype = choices[Math.floor(random() * choices.length)] as Archetype;
    const shape = ARCHETYPES[archetype];
    const id = `bt${pad(index, 3)}_${archetype}`;
    const prefix = `bt${pad(index, 3)}`;

    const target = integerBetween(random, 2, 6);
    const notes = Math.max(0, target - shape.parameters.length);
    const parameters: (BenchParameter & { readonly default?: string })[] = [
      ...shape.parameters,
      ...Array.from({ length: notes }, (_, note) => ({
        name: `note${note + 1}`,
        kind: 'text' as const,
        required: false,
        default: '',
      })),
    ];
    const first = (parameters[0] as BenchParameter).name;
    const noteText = parameters.slice(shape.parameters.length).map((parameter) => `{{${parameter.name}}}`);
    // Fresh arrays per version: the fleet is plain data that callers may edit.
    const promisesOf = (version: string): Promises => [
      ...shape.promises(prefix),
      ...(notes > 0
        ? [
            {
              type: 'reports' as const,
              promiser: `${prefix} {{${first}}}: ${noteText.join(' ')}`,
              attributes: verbose(),
            },
          ]
        : []),
      ...(version === '1.0'
        ? []
        : [
            {
              type: 'reports' as const,
              promiser: `${prefix} version ${version} applied for {{${first}}}`,
              attributes: verbose(),
            },
          ]),
    ];
    const twoVersions = generation !== 'merged' && random() < 0.08;
    const versions = twoVersions ? ['1.0', '2.0'] : ['1.0'];
    const inputs = versions.map((version): TechniqueInput => {
      const technique: TechniqueInput = {
        id,
        version,
        name: `Bench ${archetype.replace('_', ' ')} ${pad(index, 3)}`,
        multiInstance: generation !== 'unique',
        parameters: parameters.map(({ name, required, default: fallback }) =>
          fallback === undefined ? { name, required } : { name, required, default: fallback },
        ),
        promises: promisesOf(version),
      };
      if (generation !== 'unique') technique.policyGeneration = generation;
      const refresh = shape.refresh?.(prefix);
      if (refresh) technique.refresh = refresh;
      return technique;
    });
    techniques.push({
      index,
      id,
      archetype,
      generation,
      versions,
      parameters: parameters.map(({ name, kind, required }) => ({ name, kind, required })),
      inputs,
    });
  }
  return techniques;
}
