import { Pool } from 'pg';
import { createClient } from 'redis';
import { createKafkaMessaging } from '@policygen/messaging';
import { getTestInfrastructure } from '@policygen/testing-infra';
import { runPipelineBench } from './pipeline-bench';
import type { PipelineReport } from './report';

const infrastructure = getTestInfrastructure();

/**
 * The pipeline benchmark's small form: the real services as processes on the harness's Kafka,
 * Redis and Postgres. Correctness only (every bundle on the relay is the engine's, every change
 * drained, the report complete); how fast is the benchmark's to say, never a test's.
 */
describe('policygen bench --pipeline (small)', () => {
  let report: PipelineReport;

  beforeAll(async () => {
    report = await runPipelineBench({
      nodes: 600,
      seed: 3,
      rate: 5,
      seconds: 4,
      warmUpSeconds: 2,
      generators: 1,
      infrastructure,
      httpChecks: 100,
    });
  }, 600_000);

  it('imports every node with a bundle onto relay root, with the engine hashes', () => {
    expect(report.fleet.nodesWithBundle).toBeGreaterThan(500);
    expect(report.import.hashMismatches).toBe(0);
    expect(report.import.secondsTo99).toBeGreaterThan(0);
    expect(report.import.secondsTo100).toBeGreaterThanOrEqual(report.import.secondsTo99);
  });

  it('commits every change set of the steady load and drains each wholly onto the relay', () => {
    const { steady } = report;
    expect(steady.changeSets).toBe(20);
    expect(steady.committed).toBe(20);
    expect(steady.failedCommits).toBe(0);
    expect(
      steady.byKind['node-property'] + steady.byKind['directive-parameter'] + steady.byKind['group-property'],
    ).toBe(20);
    expect(steady.lagMs.count + steady.withoutBundleChange).toBe(20);
    expect(steady.nodeChanges).toBeGreaterThanOrEqual(steady.lagMs.count);
    expect(steady.drainedSeconds).toBeGreaterThanOrEqual(0);
    expect(steady.committedPerSecond).toBeGreaterThan(0);
  });

  it('runs the warm-up load before the measured one, drained, in a phase of its own', () => {
    const { warmUp } = report;
    expect(warmUp?.changeSets).toBe(10);
    expect(warmUp?.committed).toBe(10);
    expect(warmUp?.nodeChanges).toBeGreaterThanOrEqual(warmUp?.lagMs.count ?? 1);
    expect(warmUp?.services.cpuMsPerNodeChange).toBeGreaterThan(0);
    for (const service of report.processes.filter((process) => process.role === 'service'))
      expect(service.cpuSecondsByPhase['warm-up']).toBeGreaterThan(0);
    expect(report.perNode.steadyPhases).toEqual(['steady', 'drain']);
  });

  it('ends with every relay serving exactly the bundles the engine computes, after every change set', () => {
    expect(report.verification.nodesCompared).toBe(report.fleet.nodesWithBundle);
    expect(report.verification.mismatches).toBe(0);
    expect(report.verification.httpChecked).toBe(200);
    expect(report.verification.httpMismatches).toBe(0);
    expect(report.freshRelay.nodes).toBe(report.fleet.nodesWithBundle);
    expect(report.freshRelay.requests).toBeGreaterThan(0);
  });

  it('reports every figure the issue names, for every process', () => {
    for (const figure of [
      report.import.secondsTo99,
      report.steady.lagMs.p99,
      report.steady.commitMs.p99,
      report.steady.drainedSeconds,
      report.freshRelay.seconds,
      report.freshRelay.requests,
    ])
      expect(typeof figure).toBe('number');
    expect(Object.keys(report.peakRssMiB).sort()).toEqual([
      'bench (this process)',
      'config-service',
      'distribution-service',
      'generator g1',
      'relay fresh',
    ]);
    for (const service of report.processes) {
      // A Node.js service holds tens of MiB at least: a smaller figure would be some other process's.
      expect(service.peakRssMiB).toBeGreaterThan(20);
      expect(service.cpuSeconds).toBeGreaterThan(0);
    }
    expect(report.machine.loadAverageBefore).toHaveLength(3);
    expect(report.machine.loadAverageAfter).toHaveLength(3);
  });

  it('measures the engine yardstick and counts every process in it', () => {
    expect(report.yardstick.engineMsPerNode).toBeGreaterThan(0);
    expect(report.rulerAfterRun.engineMsPerNode).toBeGreaterThan(0);
    expect(report.rulerAfterRun.servicesTimesMeanRuler.steady).toBeGreaterThan(0);
    expect(report.yardstick.warmUpNodes + report.yardstick.nodesTimed).toBeLessThanOrEqual(600);
    expect(report.yardstick.nodesTimed).toBeGreaterThanOrEqual(300);
    expect(report.perNode.services.names).toEqual(['config-service', 'generator g1', 'distribution-service']);
    expect(report.perNode.services.cpuMsPerNode).toBeGreaterThan(0);
    expect(report.perNode.services.importTimesEngine).toBeGreaterThan(0);
    expect(report.perNode.configServiceSteadyTimesEngine).not.toBeNull();
    for (const service of report.processes) {
      expect(service.steadyTimesEngine).not.toBeNull();
      expect(Object.keys(service.peakRssMiBByPhase).length).toBeGreaterThan(0);
    }
    expect(report.scaleOut).toBeUndefined();
  });

  it('leaves no schema, Redis key or topic of its namespace behind', async () => {
    const id = report.namespace.replace(/^bench-/, '');
    const pool = new Pool({ connectionString: infrastructure.databaseUrl });
    const schemas = await pool.query('select 1 from information_schema.schemata where schema_name = $1', [
      `bench_${id}`,
    ]);
    await pool.end();
    expect(schemas.rowCount).toBe(0);

    const redis = createClient({ url: infrastructure.redisUrl });
    await redis.connect();
    const keys = await redis.keys(`bench:${id}:*`);
    await redis.close();
    expect(keys).toEqual([]);

    const admin = await createKafkaMessaging({ brokers: [...infrastructure.kafkaBrokers] }).createAdmin();
    const topics = await admin.listTopics();
    await admin.close();
    expect(topics.filter((topic) => topic.startsWith(`${report.namespace}.`))).toEqual([]);
  });
});
