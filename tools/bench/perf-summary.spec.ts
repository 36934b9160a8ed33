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

  it("gives each main thread's samples by the source its leaf-most JavaScript frame was bundled from", () => {
    const bundle = join(dir, 'main.js');
    writeFileSync(bundle, 'a();\nb();\n');
    // Line 1 from kafkajs, line 2 from the sdk library (one segment each: column 0 of source 0, then of source 1).
    writeFileSync(
      `${bundle}.map`,
      JSON.stringify({
        version: 3,
        sources: ['../node_modules/kafkajs/src/network/connection.js', '../libs/sdk/src/contract/schemas.ts'],
        names: [],
        mappings: 'AAAA;ACAA',
      }),
    );
    const file = join(dir, 'by-source.txt');
    writeFileSync(
      file,
      [
        sample('300/300', ['__libc_write', `JS:*send ${bundle}:1:1`, `JS:^run ${bundle}:2:1`]),
        sample('300/300', [`JS:*plainBundleEvent ${bundle}:2:1`]),
        sample('300/300', ['Builtins_JsonParse', `JS:^parseEvent ${bundle}:2:1`]),
        sample('300/300', ['JS:^processTicksAndRejections node:internal/process/task_queues:67:35']),
        sample('300/300', ['epoll_wait', 'uv_run']),
        // perf right-aligns a short pid.
        sample(' 300/301', ['v8::internal::compiler::PipelineImpl::OptimizeGraph']),
      ].join('\n'),
    );
    const text = execFileSync(process.execPath, [script, file], { encoding: 'utf8' });
    expect(text).toContain('process 300: 6 samples, main thread 83.3%');
    const bySource = text.slice(text.indexOf('by the source'), text.indexOf('leaves:'));
    expect(bySource).toMatch(/40\.0%\s+libs\/sdk\/src\/contract/);
    expect(bySource).toMatch(/20\.0%\s+kafkajs/);
    expect(bySource).toMatch(/20\.0%\s+node:internal/);
    expect(bySource).toMatch(/20\.0%\s+\(no JavaScript\)/);
  });

  it('says how to call it when given no file', () => {
    expect(() => execFileSync(process.execPath, [script], { stdio: 'pipe' })).toThrow(/usage/);
  });
});
