/** tools/bench/config-ab.ts: two config-service builds side by side (here: this tree's, twice). */
import { getTestInfrastructure, workspaceRoot } from '@policygen/testing-infra';
import { formatConfigAb, runConfigAb } from './config-ab';

describe('the config-service A/B benchmark (small)', () => {
  it('commits the same change sets to both builds, in timed blocks, and reports each block', async () => {
    const report = await runConfigAb({
      against: workspaceRoot(),
      nodes: 300,
      rounds: 2,
      block: 4,
      rate: 50,
      warmUp: 3,
      infrastructure: getTestInfrastructure(),
    });
    // The import, then every warm-up and timed commit, on each build.
    expect(report.revisions).toEqual([1 + 3 + 2 * 4, 1 + 3 + 2 * 4]);
    expect(report.here).toHaveLength(2);
    expect(report.against).toHaveLength(2);
    for (const value of [...report.here, ...report.against]) expect(value).toBeGreaterThanOrEqual(0);
    expect(formatConfigAb(report)).toContain('this tree / other');
  }, 300_000);
});
