import { validateFleet } from '@policygen/engine';
import { buildBenchFleet } from '@policygen/fleets';
import { checkRuler, measureYardstick } from './yardstick';

describe('measureYardstick', () => {
  it('times every node after the warm-up in three rounds, and keeps the median round', () => {
    const validation = validateFleet(buildBenchFleet({ nodes: 150, seed: 3 }).fleet);
    if (!validation.ok) throw new Error('the bench fleet is invalid');
    const yardstick = measureYardstick(validation.fleet, { warmUpNodes: 60, timedNodes: 1_000 });

    expect(yardstick.warmUpNodes).toBe(60);
    expect(yardstick.nodesTimed).toBe(validation.fleet.nodes.length - 60);
    expect(yardstick.roundsMsPerNode).toHaveLength(3);
    const sorted = [...yardstick.roundsMsPerNode].sort((a, b) => a - b);
    expect(yardstick.engineMsPerNode).toBe(sorted[1]);
    expect(yardstick.engineMsPerNode).toBeGreaterThan(0);
    expect(yardstick.engineWallMsPerNode).toBeGreaterThan(0);
  });

  it('times untouched nodes again in slices, each after its pause, beside the ruler and not as it', () => {
    const validation = validateFleet(buildBenchFleet({ nodes: 200, seed: 5 }).fleet);
    if (!validation.ok) throw new Error('the bench fleet is invalid');
    const started = Date.now();
    const yardstick = measureYardstick(validation.fleet, {
      warmUpNodes: 20,
      timedNodes: 20,
      pacedSlices: 4,
      pacedSliceNodes: 10,
      pacedPauseMs: 40,
    });

    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 40);
    expect(yardstick.paced).toMatchObject({ slices: 4, nodesPerSlice: 10, pauseMs: 40 });
    expect(yardstick.paced.engineMsPerNode).toBeGreaterThan(0);
    expect(yardstick.paced.timesRuler).toBeCloseTo(
      yardstick.paced.engineMsPerNode / yardstick.engineMsPerNode,
      1,
    );
  });

  it('times the ruler again on a fresh engine and says how far it moved', () => {
    const validation = validateFleet(buildBenchFleet({ nodes: 150, seed: 3 }).fleet);
    if (!validation.ok) throw new Error('the bench fleet is invalid');
    const options = { warmUpNodes: 60, timedNodes: 1_000 };
    const ruler = measureYardstick(validation.fleet, options);
    const check = checkRuler(validation.fleet, ruler, options);

    expect(check.roundsMsPerNode).toHaveLength(3);
    expect(check.engineMsPerNode).toBe([...check.roundsMsPerNode].sort((a, b) => a - b)[1]);
    expect(check.driftPercent).toBeCloseTo(
      ((check.engineMsPerNode - ruler.engineMsPerNode) / ruler.engineMsPerNode) * 100,
      0,
    );
  });

  it('warms up at least the nodes asked and at most the most allowed, and times others', () => {
    const validation = validateFleet(buildBenchFleet({ nodes: 400, seed: 7 }).fleet);
    if (!validation.ok) throw new Error('the bench fleet is invalid');
    const yardstick = measureYardstick(validation.fleet, {
      warmUpNodes: 50,
      maxWarmUpNodes: 120,
      timedNodes: 30,
    });

    expect(yardstick.warmUpNodes).toBeGreaterThanOrEqual(50);
    expect(yardstick.warmUpNodes).toBeLessThanOrEqual(120);
    expect(yardstick.nodesTimed).toBe(90);
    expect(yardstick.method).toContain(`after ${yardstick.warmUpNodes} warm-up nodes`);
  });
});
