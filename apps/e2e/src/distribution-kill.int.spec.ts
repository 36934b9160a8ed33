import { issueNodeToken } from '@policygen/distribution';
import { eventually } from '@policygen/testing-infra';
import type { Pipeline, ServiceProcess } from './testing/pipeline';
import { generateWithCli, withPipeline } from './testing/pipeline';

/**
 * Issue 18's crash of the distribution side, on real Kafka, Redis and Postgres with the built
 * services as processes: the distribution-service and a relay killed (SIGKILL) while a large sync
 * runs, restarted on their files, converge on what `policygen generate` gives for the final
 * configuration, their files repaired where a write was torn.
 */

interface Status {
  readonly cursor: number;
  readonly nodes: number;
}

async function statusOf(service: ServiceProcess): Promise<Status | null> {
  return fetch(`${service.url}/status`).then(
    async (response) => (response.ok ? ((await response.json()) as Status) : null),
    () => null,
  );
}

/** Waits until a sync is under way at `service` (its cursor moved past `from`), then kills it. */
async function killMidSync(
  service: ServiceProcess,
  from: number,
  log: string[],
  what: string,
): Promise<void> {
  await eventually(async () => ((await statusOf(service))?.cursor ?? 0) > from, {
    what: `${what} syncing`,
    timeoutMs: 60_000,
    intervalMs: 10,
  });
  const status = await statusOf(service);
  service.process.kill();
  log.push(`${what} killed (SIGKILL) at cursor ${status?.cursor ?? '?'} with ${status?.nodes ?? '?'} nodes`);
  await eventually(() => !service.process.running, { what: `${what} gone` });
}

/** The bundle hash the relay serves each node, as the node itself asks (its listing, with its token). */
async function servedBy(
  relay: ServiceProcess,
  secret: string,
  nodeIds: readonly string[],
): Promise<Map<string, string | null>> {
  const expiresAt = new Date(Date.now() + 3_600_000);
  const served = new Map<string, string | null>();
  for (const nodeId of nodeIds) {
    const response = await fetch(`${relay.url}/nodes/${encodeURIComponent(nodeId)}/policies`, {
      headers: {
        authorization: `Bearer ${issueNodeToken(secret, nodeId, expiresAt)}`,
        accept: 'application/json',
      },
    });
    served.set(nodeId, response.ok ? ((await response.json()) as { hash: string }).hash : null);
  }
  return served;
}

async function changeEveryNode(pipeline: Pipeline, step: number): Promise<void> {
  const changed = await pipeline.request('POST', '/api/v1/changes', {
    upsert: { parameters: { e2e_kill: { step } } },
  });
  if (changed.status !== 200)
    throw new Error(`the change answered ${changed.status}: ${JSON.stringify(changed.body)}`);
}

describe('the distribution-service and a relay killed mid-sync', () => {
  it(
    'restarted on their files, converge on `policygen generate` of the final configuration',
    () =>
      withPipeline(async (pipeline) => {
        const injected: string[] = [];
        await pipeline.startGenerator();
        let distribution = await pipeline.startDistribution();
        let relay = await pipeline.startRelay('root', distribution.url);

        // The import's bundles (every node) flowing: both killed while the distribution-service writes them.
        await pipeline.importDemoFleet();
        await killMidSync(distribution, 0, injected, 'distribution-service');
        relay.process.kill();
        injected.push('relay root killed (SIGKILL) with it');
        await eventually(() => !relay.process.running, { what: 'relay root gone' });
        distribution = await pipeline.startDistribution();
        relay = await pipeline.startRelay('root', distribution.url);

        // A change of every node: the relay killed while it fetches the new bundles.
        await eventually(
          async () => {
            const [at, head] = [await statusOf(relay), await statusOf(distribution)];
            return !!at && !!head && head.cursor > 0 && at.cursor === head.cursor;
          },
          { what: 'relay root caught up after the restart', timeoutMs: 120_000 },
        );
        const before = (await statusOf(relay))?.cursor ?? 0;
        await changeEveryNode(pipeline, 1);
        await killMidSync(relay, before, injected, 'relay root');
        injected.push(
          `(the change's entries end at ${(await statusOf(distribution))?.cursor ?? '?'}; the relay was at ${before})`,
        );
        relay = await pipeline.startRelay('root', distribution.url);
        await changeEveryNode(pipeline, 2);

        const expected = generateWithCli(await pipeline.exportFleet());
        const nodeIds = [...expected.keys()].sort();
        let served = new Map<string, string | null>();
        await eventually(
          async () => {
            served = await servedBy(relay, pipeline.tokenSecret, nodeIds);
            return nodeIds.every((nodeId) => served.get(nodeId) === expected.get(nodeId));
          },
          {
            what: `relay root serving the ${nodeIds.length} bundles of the final configuration`,
            timeoutMs: 120_000,
            intervalMs: 500,
          },
        );
        expect(served).toEqual(expected);
        expect((await statusOf(distribution))?.nodes).toBeGreaterThanOrEqual(nodeIds.length);
        const ready = await fetch(`${relay.url}/health/ready`);
        expect(ready.status).toBe(200);
        const repaired = (await (await fetch(`${relay.url}/metrics`)).text())
          .split('\n')
          .filter((line) => line.startsWith('policygen_torn_writes_repaired_total{'));
        process.stdout.write(
          `faults injected:\n  ${injected.join('\n  ')}\ntorn writes repaired at the relay: ${repaired.join(', ') || 'none'}\n`,
        );
      }),
    300_000,
  );
});
