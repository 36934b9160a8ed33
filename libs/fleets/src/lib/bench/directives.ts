import type { Json } from '@policygen/engine';
import type { DirectiveInput } from '../fleet-file';
import { mulberry32 } from '../random';
import type { Random } from '../random';
import { BENCH_PARAMETERS, CONTACT_REFERENCE, LANDMARK_PARAMETER, PROPERTY_REFERENCES } from './catalog';
import type { BenchSizes } from './sizes';
import { integerBetween, mixSeed, pad, picker, shuffle, STREAMS } from './sizes';
import type { BenchParameter, BenchTechnique, Generation } from './techniques';

export type Metaparameter = 'before' | 'require' | 'notify' | 'subscribe';

/** A directive being built: its input, and what the rule and relationship steps need to know. */
export interface BenchDirective {
  readonly index: number;
  readonly technique: BenchTechnique;
  readonly input: DirectiveInput;
  readonly landmark?: 'all' | 'ten' | 'one';
}

/** Indexes of the landmark directives: the first three, each on its own landmark rule only. */
export const LANDMARK_DIRECTIVES = { all: 0, ten: 1, one: 2 } as const;

const pickPriority = picker([
  [0, 3],
  [1, 3],
  [2, 5],
  [3, 6],
  [4, 7],
  [5, 30],
  [6, 7],
  [7, 6],
  [8, 5],
  [9, 3],
  [10, 5],
] as const);

/** What the first free-text parameter of a directive holds: mostly static text. */
const pickFlavour = picker([
  ['static', 80],
  ['property', 10],
  ['parameter', 5],
  ['hostname', 5],
] as const);

const PARAMETER_NAMES = Object.keys(BENCH_PARAMETERS);
const pickParameterName = picker(
  PARAMETER_NAMES.map((name) => [name, name === LANDMARK_PARAMETER ? 4 : 1] as const),
);
const pickPackageState = picker([
  ['present', 8],
  ['latest', 1],
  ['absent', 1],
] as const);

export function directiveId(index: number): string {
  return `d-${pad(index, 5)}`;
}

/**
 * The directives, techniques drawn Zipf-like (a few techniques carry most directives). The three
 * landmark directives use multi-instance techniques, so that no other directive ever overrides them.
 */
export function benchDirectives(sizes: BenchSizes, techniques: readonly BenchTechnique[]): BenchDirective[] {
  const random = mulberry32(mixSeed(sizes.seed, STREAMS.directives));
  const ranks = shuffle(
    random,
    techniques.map((_, index) => index),
  );
  const pickTechnique = picker(
    ranks.map((techniqueIndex, rank) => [techniqueIndex, 1 / (rank + 1) ** 0.6] as const),
  );
  const firstOf = (generation: Generation): BenchTechnique =>
    techniques.find((technique) => technique.generation === generation) as BenchTechnique;
  const landmarkTechniques: Readonly<Record<'all' | 'ten' | 'one', BenchTechnique>> = {
    all: firstOf('merged'),
    ten: firstOf('separated'),
    one: firstOf('separated-with-parameters'),
  };
  const landmarkOf = (index: number): 'all' | 'ten' | 'one' | undefined =>
    index === LANDMARK_DIRECTIVES.all
      ? 'all'
      : index === LANDMARK_DIRECTIVES.ten
        ? 'ten'
        : index === LANDMARK_DIRECTIVES.one
          ? 'one'
          : undefined;

  const directives: BenchDirective[] = [];
  for (let index = 0; index < sizes.directives; index++) {
    const landmark = landmarkOf(index);
    const technique = landmark
      ? landmarkTechniques[landmark]
      : (techniques[pickTechnique(random)] as BenchTechnique);
    const version =
      technique.versions.length > 1 && !landmark
        ? (technique.versions[random() < 0.6 ? 0 : 1] as string)
        : '1.0';
    const id = directiveId(index);
    const input: DirectiveInput = {
      id,
      name: `${technique.archetype.replace('_', ' ')} ${pad(index, 5)}`,
      technique: technique.id,
      priority: pickPriority(random),
      parameters: directiveParameters(random, technique, index, landmark === 'all'),
    };
    if (technique.versions.length > 1) input.techniqueVersion = version;
    // A few disabled directives, never a landmark (nor, later, named by a metaparameter).
    if (!landmark && random() < 0.005) input.enabled = false;
    directives.push(landmark ? { index, technique, input, landmark } : { index, technique, input });
  }
  return directives;
}

function directiveParameters(
  random: Random,
  technique: BenchTechnique,
  index: number,
  referencesContact: boolean,
): Record<string, Json> {
  const values: Record<string, Json> = {};
  const flavour = referencesContact ? 'contact' : pickFlavour(random);
  let flavoured = false;
  for (const parameter of technique.parameters) {
    const isFirstText = parameter.kind === 'text' && !flavoured;
    if (isFirstText && flavour !== 'static') {
      values[parameter.name] = referenceText(random, flavour, index);
      flavoured = true;
      continue;
    }
    if (!parameter.required && random() < 0.5) continue;
    values[parameter.name] = staticValue(random, parameter, technique, index);
  }
  return values;
}

function referenceText(
  random: Random,
  flavour: 'property' | 'parameter' | 'hostname' | 'contact',
  index: number,
): string {
  switch (flavour) {
    case 'contact':
      return `contact ${CONTACT_REFERENCE}, resolver \${rudder.param.${LANDMARK_PARAMETER}}`;
    case 'property':
      return `setting ${index}: ${PROPERTY_REFERENCES[Math.floor(random() * PROPERTY_REFERENCES.length)] as string}`;
    case 'parameter':
      return `\${rudder.param.${pickParameterName(random)}}`;
    default:
      return `\${rudder.node.hostname} item ${index}`;
  }
}

function staticValue(
  random: Random,
  parameter: BenchParameter,
  technique: BenchTechnique,
  index: number,
): string {
  switch (parameter.kind) {
    case 'ident':
      // `user` of a cron job is an account; every other identifier names the directive's item.
      return parameter.name === 'user'
        ? (['root', 'nobody', 'daemon'][Math.floor(random() * 3)] as string)
        : `${technique.archetype}_${pad(index, 5)}`;
    case 'uid':
      return String(10_000 + index);
    case 'path':
      return ['/bin/bash', '/bin/sh', '/usr/sbin/nologin'][Math.floor(random() * 3)] as string;
    case 'schedule':
      return `${integerBetween(random, 0, 59)} ${integerBetween(random, 0, 23)} * * *`;
    case 'package-state':
      return pickPackageState(random);
    case 'service-state':
      return random() < 0.9 ? 'running' : 'stopped';
    default:
      return `${parameter.name} ${index} of ${technique.id}`;
  }
}
