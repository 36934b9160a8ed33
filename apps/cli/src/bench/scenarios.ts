import type { CompiledFleet, Directive, FleetNode, Json } from '@policygen/engine';
import type { BenchFleetOptions, BenchLandmarks, FleetFile } from '@policygen/fleets';
import { buildBenchNodes, mulberry32 } from '@policygen/fleets';

/** What a scenario changes: change sets applied in order, then one regeneration (coalesced). */
export interface BenchScenario {
  readonly name: string;
  readonly description: string;
  readonly changeSets: (context: ScenarioContext) => unknown[];
  /** Runs measured (the median is reported): small figures are at the mercy of a GC pause. */
  readonly repeat?: number;
}

export interface ScenarioContext {
  readonly compiled: CompiledFleet;
  readonly landmarks: BenchLandmarks;
  readonly sizes: BenchFleetOptions & { readonly nodes: number };
  /** Distinguishes the values a scenario writes from those of earlier runs. */
  readonly run: number;
  /** Which of the scenario's repeated runs this is, from 0. */
  readonly iteration: number;
  /** The fleet as built, before any scenario. */
  readonly initial: FleetFile;
}

export const FULL_SCENARIO = 'full';

const entity = <T>(map: ReadonlyMap<string, T>, id: string): T => {
  const value = map.get(id);
  if (value === undefined) throw new Error(`the bench fleet has no ${id}`);
  return value;
};

function withProperty(node: FleetNode, name: string, value: Json): FleetNode {
  return { ...node, properties: { ...node.properties, [name]: value } };
}

/** The directive with its first string parameter given a new value. */
function changedDirective(directive: Directive, marker: string): Directive {
  const name = Object.keys(directive.parameters).find((key) => typeof directive.parameters[key] === 'string');
  if (name === undefined) return { ...directive, name: `${directive.name} ${marker}` };
  return {
    ...directive,
    parameters: { ...directive.parameters, [name]: `${String(directive.parameters[name])} ${marker}` },
  };
}

function directiveScenario(
  name: string,
  share: string,
  pick: (landmarks: BenchLandmarks) => string,
): BenchScenario {
  return {
    name,
    description: `one directive used by ${share} of the nodes changes a parameter`,
    changeSets: ({ compiled, landmarks, run }) => [
      {
        upsert: {
          directives: [changedDirective(entity(compiled.directives, pick(landmarks)), `bench-${run}`)],
        },
      },
    ],
  };
}

/** The scenarios of architecture.md's performance targets, full generation first. */
export const SCENARIOS: readonly BenchScenario[] = [
  {
    name: FULL_SCENARIO,
    description: 'full generation of every node from the validated fleet (index build included)',
    changeSets: () => [],
  },
  {
    name: 'node-property',
    description: "one node's property changes",
    repeat: 9,
    changeSets: ({ compiled, landmarks, run }) => {
      const { nodeId, property } = landmarks.nodeForProperty;
      return [
        { upsert: { nodes: [withProperty(entity(compiled.nodes, nodeId), property, `bench-${run}`)] } },
      ];
    },
  },
  {
    name: 'node-facts',
    description: "one node's facts change and flip its group memberships (and back)",
    repeat: 9,
    changeSets: ({ compiled, landmarks, iteration, initial }) => {
      const { nodeId, facts } = landmarks.nodeFlippingGroup;
      const original = initial.nodes.find((node) => node.id === nodeId)?.facts ?? {};
      const next = iteration % 2 === 0 ? facts : original;
      return [{ upsert: { nodes: [{ ...entity(compiled.nodes, nodeId), facts: next }] } }];
    },
  },
  directiveScenario('directive-1pct', '~1%', (landmarks) => landmarks.directiveOnOnePercent),
  directiveScenario('directive-10pct', '~10%', (landmarks) => landmarks.directiveOnTenPercent),
  directiveScenario('directive-100pct', '100%', (landmarks) => landmarks.directiveOnAll),
  {
    name: 'group-criteria',
    description: "a group's criteria change (it grows by ~1% of the nodes)",
    changeSets: ({ compiled, landmarks }) => {
      const { groupId, criteria } = landmarks.groupForCriteria;
      return [{ upsert: { groups: [{ ...entity(compiled.groups, groupId), criteria }] } }];
    },
  },
  {
    name: 'global-parameter',
    description: 'a global parameter changes (every node shows it in its properties)',
    changeSets: ({ landmarks, run }) => [
      { upsert: { parameters: { [landmarks.parameterName]: `bench-${run}` } } },
    ],
  },
  {
    name: 'add-nodes',
    description: 'adding 1,000 nodes',
    changeSets: ({ sizes, compiled }) => [
      {
        upsert: {
          nodes: buildBenchNodes({ ...sizes, count: 1_000, startIndex: compiled.nodeIds.length + 1_000_000 }),
        },
      },
    ],
  },
  {
    name: 'burst-1000',
    description: 'a burst of 1,000 mixed change sets (properties, facts, directives), regenerated once',
    changeSets: (context) => mixedBurst(context, 1_000),
  },
  {
    // Last: every scenario after it would run in audit.
    name: 'policy-mode',
    description: "the global policy mode becomes audit (every node's policies render again)",
    changeSets: () => [{ upsert: { settings: { policyMode: 'audit' } } }],
  },
];

/** Node properties (40%), node facts (30%), directive parameters (30%), on random entities. */
function mixedBurst({ compiled, landmarks, run }: ScenarioContext, count: number): unknown[] {
  const random = mulberry32(7_919 * (run + 1));
  const nodeIds = compiled.nodeIds;
  const directiveIds = [...compiled.directives.keys()];
  const nodes = new Map<string, FleetNode>();
  const changeSets: unknown[] = [];
  const pickNode = (): FleetNode => {
    const nodeId = nodeIds[Math.floor(random() * nodeIds.length)] as string;
    return nodes.get(nodeId) ?? entity(compiled.nodes, nodeId);
  };
  for (let index = 0; index < count; index++) {
    const roll = random();
    if (roll < 0.4) {
      const node = withProperty(pickNode(), landmarks.nodeForProperty.property, `burst-${run}-${index}`);
      nodes.set(node.id, node);
      changeSets.push({ upsert: { nodes: [node] } });
    } else if (roll < 0.7) {
      const node = pickNode();
      const flipped = { ...node, facts: { ...node.facts, bucket: Math.floor(random() * 100) } };
      nodes.set(node.id, flipped);
      changeSets.push({ upsert: { nodes: [flipped] } });
    } else {
      const directiveId = directiveIds[Math.floor(random() * directiveIds.length)] as string;
      changeSets.push({
        upsert: {
          directives: [changedDirective(entity(compiled.directives, directiveId), `burst-${run}-${index}`)],
        },
      });
    }
  }
  return changeSets;
}
