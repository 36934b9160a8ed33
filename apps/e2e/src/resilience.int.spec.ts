import { buildDemoFleet } from '@policygen/fleets';
import { eventually } from '@policygen/testing-infra';
import type { Entity, Pipeline } from './testing/pipeline';
import { generateWithCli, withPipeline } from './testing/pipeline';

/**
 * Issue 5's fault and scale-out acceptance, on real Postgres, Kafka and Redis with the built
 * services as processes: a generator killed (SIGKILL) in the middle of a burst of change sets and
 * restarted ends with every revision's effect; two instances in one group end where one does.
 */

const PROPERTIES_FILE = 'rules/cfengine-community/properties.d/properties.json';

/**
 * Change set `step` of a deterministic burst: a property `step_<n>` on one of 40 nodes (each node
 * collects several), and every tenth step a directive's value on many nodes.
 */
function burstChange(nodes: readonly Entity[], step: number): unknown {
  const node = nodes[step % nodes.length] as Entity;
  node['properties'] = { ...(node['properties'] as Entity), [`step_${step}`]: step };
  const upsert: Entity = { nodes: [node] };
  if (step % 10 === 0) upsert['parameters'] = { e2e_burst: { step } };
  return { upsert };
}

async function importDemo(pipeline: Pipeline): Promise<Entity[]> {
  const imported = await pipeline.request('POST', '/api/v1/import', buildDemoFleet());
  if (imported.status !== 200)
    throw new Error(`import answered ${imported.status}: ${JSON.stringify(imported.body)}`);
  const fleet = (await pipeline.exportFleet()) as { nodes: Entity[] };
  return fleet.nodes.filter((node) => node['state'] !== 'ignored').slice(0, 40);
}

async function sendBurst(pipeline: Pipeline, nodes: Entity[], from: number, to: number): Promise<void> {
  for (let step = from; step <= to; step++) {
    const response = await pipeline.request('POST', '/api/v1/changes', burstChange(nodes, step));
    if (response.status !== 200)
      throw new Error(`step ${step} answered ${response.status}: ${JSON.stringify(response.body)}`);
  }
}

async function expectFullGeneration(pipeline: Pipeline): Promise<Map<string, string>> {
  const expected = generateWithCli(await pipeline.exportFleet());
  const served = await pipeline.servedHashes();
  expect(served).toEqual(expected);
  return served;
}

const BURST = 200;

describe('generator resilience and scale-out', () => {
  let finalWithOne: Map<string, string> | undefined;

  it(
    'a generator killed mid-burst and restarted ends at a full generation of the last revision',
    () =>
      withPipeline(async (pipeline) => {
        const generator = await pipeline.startGenerator('g1');
        const nodes = await importDemo(pipeline);
        await sendBurst(pipeline, nodes, 1, 70);
        generator.process.kill();
        await generator.process.exited;
        await sendBurst(pipeline, nodes, 71, BURST);
        await pipeline.startGenerator('g1');
        const revision = await pipeline.revision();
        expect(revision).toBe(1 + BURST);
        await pipeline.settled(revision, 90_000);

        finalWithOne = await expectFullGeneration(pipeline);
        // Every revision's effect is in a bundle: step n's property is in its node's properties file,
        // a blob of the bundle the cache records for the node (the record keeps digests: the file
        // list is the event's of that bundle).
        const cache = pipeline.bundleCache();
        const missingSteps = async (): Promise<number[]> => {
          const missing: number[] = [];
          for (let step = 1; step <= BURST; step++) {
            const nodeId = String((nodes[step % nodes.length] as Entity)['id']);
            const record = await cache.nodeBundle(nodeId);
            const event = pipeline.events.bundles.find(
              (bundle) =>
                bundle.type === 'node.bundle' && bundle.nodeId === nodeId && bundle.hash === record?.hash,
            );
            const file =
              event?.type === 'node.bundle'
                ? event.files.find((entry) => entry.path === PROPERTIES_FILE)
                : undefined;
            const content =
              file && record?.digests.includes(file.sha256) ? await cache.getBlob(file.sha256) : null;
            if (!content?.includes(`"step_${step}"`)) missing.push(step);
          }
          return missing;
        };
        // The observer reads the events beside the pipeline: it may be a moment behind.
        await eventually(async () => (await missingSteps()).length === 0, {
          what: "every step's property in its node's recorded bundle",
          timeoutMs: 15_000,
        }).catch(() => undefined);
        expect(await missingSteps()).toEqual([]);
        expect(pipeline.events.schemaErrors).toEqual([]);
      }),
    240_000,
  );

  it(
    'two generator instances in one group give the bundles one instance gives',
    () =>
      withPipeline(async (pipeline) => {
        const [first, second] = [await pipeline.startGenerator('g1'), await pipeline.startGenerator('g2')];
        const nodes = await importDemo(pipeline);
        await sendBurst(pipeline, nodes, 1, BURST);
        const revision = await pipeline.revision();
        await pipeline.settled(revision, 90_000);

        const served = await expectFullGeneration(pipeline);
        expect(finalWithOne).toBeDefined();
        expect(served).toEqual(finalWithOne);
        // The work was shared: each instance owns some partitions, none owns all.
        const ownership = await Promise.all(
          [first, second].map(async (generator) => (await pipeline.generatorStatus(generator)).ownership),
        );
        const owned = ownership.map(
          (text) => /\[([\d,]*)\]/.exec(text)?.[1]?.split(',').filter(Boolean) ?? [],
        );
        expect(owned.map((partitions) => partitions.length).sort()).toEqual([3, 3]);
        expect(new Set(owned.flat()).size).toBe(6);
        expect(pipeline.events.schemaErrors).toEqual([]);
      }),
    240_000,
  );
});
