import { Worker } from 'node:worker_threads';
import { ProcessSampler } from './process-sampler';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('ProcessSampler', () => {
  it("counts a process's main-thread wake-ups: each wait for a timer that ends is one", async () => {
    const sampler = new ProcessSampler();
    sampler.watch('this process', process.pid);
    const before = sampler.wakeUps().get('this process') ?? 0;
    for (let wait = 0; wait < 20; wait++) await sleep(5);
    const after = sampler.wakeUps().get('this process') ?? 0;
    expect(after - before).toBeGreaterThanOrEqual(20);
    expect(sampler.figures()[0]?.wakeUps).toBeGreaterThanOrEqual(after);
  });

  it('counts CPU time and memory of what it watches', async () => {
    const sampler = new ProcessSampler();
    sampler.watch('this process', process.pid);
    const spin = Date.now() + 50;
    while (Date.now() < spin) Math.sqrt(Math.random());
    const [figures] = sampler.figures();
    expect(figures?.cpuSeconds).toBeGreaterThan(0);
    expect(figures?.rssMiB).toBeGreaterThan(10);
  });

  it('counts the CPU of threads other than the main one apart', async () => {
    const sampler = new ProcessSampler();
    sampler.watch('this process', process.pid);
    const before = sampler.helperThreadsCpuSeconds().get('this process') ?? 0;
    const worker = new Worker(
      'const end = Date.now() + 400; while (Date.now() < end) Math.sqrt(Math.random());',
      { eval: true },
    );
    await new Promise((resolve) => worker.once('exit', resolve));
    const after = sampler.helperThreadsCpuSeconds().get('this process') ?? 0;
    expect(after - before).toBeGreaterThanOrEqual(0.25);
    expect(after).toBeLessThanOrEqual(sampler.cpuSeconds().get('this process') ?? 0);
  });
});
