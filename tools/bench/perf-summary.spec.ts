/** tools/bench/perf-summary.mjs on `perf script` output of two processes, one with a helper thread. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const script = join(__dirname, 'perf-summary.mjs');

const sample = (pidTid: string, frames: readonly string[]): string =>
  [`${pidTid} `, ...frames.map((frame, index) => `\t    ${(0x1000 + index).toString(16)} ${frame}`), ''].join(
    '\n',
  );

const PERF_SCRIPT = [
  sample('100/100', [
    'JS:*plainBundleEvent /srv/dist/distribution-service/main.js:10:1',
    'JS:^bundles /x.js:1:1',
  ]),
  sample('100/100', ['Builtins_LoadIC', 'JS:*plainBundleEvent /srv/dist/distribution-service/main.js:10:1']),
  sample('100/104', [
    'v8::internal::compiler::PipelineImpl::OptimizeGraph',
    'v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal',
  ]),
  sample('100/105', ['v8::internal::Scavenger::Process', 'v8::internal::ScavengerCollector::CollectGarbage']),
  sample('200/200', ['v8::internal::JsonParser<unsigned char>::ParseJsonValue', 'JS:^parse /x.js:1:1']),
  sample('200/200', ['copy_folio_from_iter_atomic', 'ksys_write']),
].join('\n');

describe('perf-summary', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'perf-summary-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("sorts each process's samples, every thread's, by kind of work", () => {
    const file = join(dir, 'perf.txt');
    writeFileSync(file, PERF_SCRIPT);
    const text = execFileSync(process.execPath, [script, file, '--top', '2'], { encoding: 'utf8' });
    const [first, second] = text.split(/^(?=process )/m);
    expect(first).toContain('process 100: 4 samples, main thread 50.0%');
    for (const kind of ['JavaScript (compiled)', 'V8 built-ins', 'V8 compiler', 'garbage collection'])
      expect(first).toMatch(new RegExp(`25\\.0%\\s+${kind.replace(/[()]/g, '\\$&')}`));
    expect(first).toContain('JS:*plainBundleEvent:10:1');
    expect(second).toContain('process 200: 2 samples, main thread 100.0%');
    expect(second).toMatch(/50\.0%\s+JSON/);
    expect(second).toMatch(/50\.0%\s+kernel, libc/);
  });

  it('says how to call it when given no file', () => {
    expect(() => execFileSync(process.execPath, [script], { stdio: 'pipe' })).toThrow(/usage/);
  });
});
