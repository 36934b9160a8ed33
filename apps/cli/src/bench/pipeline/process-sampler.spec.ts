import { Worker } from 'node:worker_threads';
import { closeSync, openSync, writeSync } from 'node:fs';
import { parseIo, ProcessSampler } from './process-sampler';

describe('ProcessSampler', () => {
  it("counts a process's main-thread wake-ups: each wait for a timer that ends is one", () => {
    const sampler = new ProcessSampler();
    sampler.watch('this process', process.pid);
    const before = sampler.wakeUps().get('this process') ?? 0;
    // A futex wait always sleeps until its timeout; the event loop's timers may not sleep at all
    // when the machine is loaded (a timer already due when the loop polls: CI once saw 1 of 20).
    const cell = new Int32Array(new SharedArrayBuffer(4));
    for (let wait = 0; wait < 20; wait++) Atomics.wait(cell, 0, 0, 5);
    const after = sampler.wakeUps().get('this process') ?? 0;
    expect(after - before).toBeGreaterThanOrEqual(20);
    expect(sampler.figures()[0]?.wakeUps).toBeGreaterThanOrEqual(after);
  });

  it('counts the bytes a process writes, whatever it writes to', () => {
    const sampler = new ProcessSampler();
    sampler.watch('this process', process.pid);
    const before = sampler.ioBytes().get('this process');
    const sink = openSync('/dev/null', 'w');
    try {
      for (let write = 0; write < 4; write++) writeSync(sink, Buffer.alloc(256 * 1024));
    } finally {
      closeSync(sink);
    }
    const after = sampler.ioBytes().get('this process');
    expect(before).toBeDefined();
    expect((after?.written ?? 0) - (before?.written ?? 0)).toBeGreaterThanOrEqual(1024 * 1024);
  });

  it("reads /proc/<pid>/io's counters, and none when one is missing", () => {
    const text = [
      'rchar: 18929000',
      'wchar: 15140616',
      'syscr: 3534',
      'syscw: 2409',
      'read_bytes: 0',
      'write_bytes: 274432',
      'cancelled_write_bytes: 0',
    ].join('\n');
    expect(parseIo(text)).toEqual({ read: 18_929_000, written: 15_140_616, disk: 274_432 });
    expect(parseIo(text.replace('write_bytes: 274432', ''))).toBeUndefined();
    // cancelled_write_bytes is not write_bytes
    expect(parseIo('rchar: 1\nwchar: 2\ncancelled_write_bytes: 3')).toBeUndefined();
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
