/** tools/bench/stage-bench.ts: the generator's and the root's stages in one process, on a small fleet. */
import { formatStageReport, runStageBench } from './stage-bench';

describe('the stage benchmark', () => {
  it('carries every node from the engine to the root feed, through an import and changes, and reports each stage per node', async () => {
    const report = await runStageBench({ nodes: 120, slice: 16, changes: 12 });
    expect(report.nodes).toBe(120);
    expect(report.measuredNodes).toBe(60);
    // The feed holds, for every node the engine gave a bundle, that bundle's hash.
    expect(report.feedMatchesEngine).toBe(true);
    for (const stage of ['engine', 'publish', 'parse', 'distribute'] as const)
      expect(report.msPerNode[stage]).toBeGreaterThan(0);
    expect(report.filesPerEvent).toBeGreaterThan(1);
    // The steady mix reaches nodes (one node's property at least), and every stage works for them.
    expect(report.steady.changeSets).toBe(12);
    expect(report.steady.nodeChanges).toBeGreaterThanOrEqual(12);
    for (const stage of ['engine', 'publish', 'parse', 'distribute'] as const)
      expect(report.steady.msPerNodeChange[stage]).toBeGreaterThan(0);
    expect(report.bytesPerNode.event).toBeGreaterThan(report.filesPerEvent * 64);
    expect(formatStageReport(report)).toContain('root feed equal to the engine');
  });
});
