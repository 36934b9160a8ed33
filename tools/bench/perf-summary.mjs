#!/usr/bin/env node
// Sorts the CPU samples of `perf record -g` on the services by what they were doing: JavaScript,
// V8's optimising compiler, garbage collection, JSON, built-ins, the kernel. Unlike `--cpu-prof`,
// which samples the main thread's wall time, perf counts every thread's CPU: V8's helper threads
// (the compiler and the collector) and libuv's pool are in it.
//
//   npx policygen bench --pipeline --node-option=--perf-basic-prof-only-functions … &
//   perf record -F 499 -g -p "$(pgrep -d, -f 'dist/.*/main.js')" -o perf.data -- sleep 20
//   perf script -i perf.data -F pid,tid,ip,sym > perf.txt
//   node tools/bench/perf-summary.mjs perf.txt [--top N]
//
// Each main thread's samples are also given by the source its leaf-most JavaScript frame came from
// (a package of node_modules, a library or app of this workspace, one of Node's own modules), read
// from the bundle's source map (`dist/<service>/main.js.map`): native work is counted with the code
// that called it, so JSON.parse of an event counts with the event's reader, a socket write with
// the client that wrote it.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';

/** @typedef {{ pid: string, tid: string, frames: string[] }} Sample */

/**
 * The kinds of work, first match wins; a sample's whole stack is looked at, its leaf for the last ones.
 * @type {[string, (stack: string) => boolean][]}
 */
const KINDS = [
  ['V8 compiler', (stack) => /compiler::|Maglev|Compiler::Compile|OptimizingCompileDispatcher/.test(stack)],
  [
    'garbage collection',
    (stack) =>
      /Scavenge|MarkCompact|ConcurrentMarking|Sweeper|MinorMC|Heap::CollectGarbage|GCTracer/.test(stack),
  ],
  ['JSON', (stack) => /JsonParser|JsonStringifier/.test(stack)],
];

/** @param {string} text */
function samplesOf(text) {
  /** @type {Sample[]} */
  const samples = [];
  /** @type {Sample | undefined} */
  let current;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    // A sample's first line is its `pid/tid`, right-aligned (a space before a short pid); frames start with a tab.
    if (!line.startsWith('\t') && /^\s*\d+\/\d+(\s|$)/.test(line)) {
      const [pid = '?', tid = '?'] = (line.trim().split(/\s+/)[0] ?? '').split('/');
      current = { pid, tid, frames: [] };
      samples.push(current);
    } else if (current) {
      const [, ...symbol] = line.trim().split(' ');
      current.frames.push(symbol.join(' '));
    }
  }
  return samples;
}

/** @param {Sample} sample */
function kindOf(sample) {
  const stack = sample.frames.join('\n');
  for (const [kind, matches] of KINDS) if (matches(stack)) return kind;
  const leaf = sample.frames[0] ?? '';
  if (leaf.startsWith('JS:')) return 'JavaScript (compiled)';
  if (leaf.startsWith('Builtins_')) return 'V8 built-ins';
  if (/^[a-z_0-9.]+$/.test(leaf)) return 'kernel, libc';
  return 'other native';
}

/** @param {Sample} sample */
function leafOf(sample) {
  return (sample.frames[0] ?? '?').replace(/ \/\S+\/dist\/[^/]+\/main\.js/, '');
}

/** @type {Map<string, SourceMap | null>} */
const sourceMaps = new Map();

/** @param {string} bundle */
function sourceMapOf(bundle) {
  let map = sourceMaps.get(bundle);
  if (map === undefined) {
    map = null;
    try {
      if (existsSync(`${bundle}.map`)) map = new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, 'utf8')));
    } catch (error) {
      // A map that cannot be read leaves its bundle's samples named by the bundle, not the run.
      console.error(`${bundle}.map: ${/** @type {Error} */ (error).message}`);
    }
    sourceMaps.set(bundle, map);
  }
  return map;
}

/**
 * What a source path belongs to: `kafkajs`, `@nestjs/core`, `libs/sdk/src/contract`, `apps/relay`.
 * @param {string} source
 */
function ownerOf(source) {
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source);
  if (modules) return modules[1] ?? source;
  const workspace = /(libs\/[^/]+\/src\/(?:lib\/)?[^/.]+|apps\/[^/]+)/.exec(source);
  return workspace?.[1] ?? source;
}

/**
 * The source of the sample's leaf-most JavaScript frame; "(no JavaScript)" when it ran none.
 * @param {Sample} sample
 */
function sourceOf(sample) {
  for (const frame of sample.frames) {
    const js = /^JS:\S*\s+(\S+):(\d+):(\d+)$/.exec(frame);
    if (!js) continue;
    const [, url = '', line = '0', column = '0'] = js;
    if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[0]}`;
    const entry = sourceMapOf(url)?.findEntry(Number(line) - 1, Number(column) - 1);
    const original = entry && 'originalSource' in entry ? entry.originalSource : undefined;
    return original ? ownerOf(original) : url;
  }
  return '(no JavaScript)';
}

const args = process.argv.slice(2);
const file = args.find((arg) => !arg.startsWith('--'));
const topAt = args.indexOf('--top');
const top = topAt >= 0 ? Number(args[topAt + 1]) : 12;
if (!file) {
  console.error('usage: node tools/bench/perf-summary.mjs PERF_SCRIPT_OUTPUT [--top N]');
  process.exit(2);
}
/** @type {Map<string, Sample[]>} */
const byProcess = new Map();
for (const sample of samplesOf(readFileSync(file, 'utf8')))
  byProcess.set(sample.pid, [...(byProcess.get(sample.pid) ?? []), sample]);
for (const [pid, samples] of byProcess) {
  const share = (/** @type {number} */ count) => `${((100 * count) / samples.length).toFixed(1)}%`;
  const mainThread = samples.filter((/** @type {Sample} */ sample) => sample.tid === pid).length;
  console.log(`process ${pid}: ${samples.length} samples, main thread ${share(mainThread)}`);
  /** @type {Map<string, number>} */
  const kinds = new Map();
  for (const sample of samples) kinds.set(kindOf(sample), (kinds.get(kindOf(sample)) ?? 0) + 1);
  for (const [kind, count] of [...kinds].sort((a, b) => b[1] - a[1]))
    console.log(`  ${share(count).padStart(6)}  ${kind}`);
  /** @type {Map<string, number>} */
  const leaves = new Map();
  for (const sample of samples) leaves.set(leafOf(sample), (leaves.get(leafOf(sample)) ?? 0) + 1);
  /** @type {Map<string, number>} */
  const sources = new Map();
  for (const sample of samples) {
    if (sample.tid !== pid) continue;
    const source = sourceOf(sample);
    sources.set(source, (sources.get(source) ?? 0) + 1);
  }
  const ofMain = (/** @type {number} */ count) => `${((100 * count) / Math.max(1, mainThread)).toFixed(1)}%`;
  console.log('  main thread, by the source of its leaf-most JavaScript frame (% of the main thread):');
  for (const [source, count] of [...sources].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${ofMain(count).padStart(6)}  ${source}`);
  console.log('  leaves:');
  for (const [leaf, count] of [...leaves].sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(`  ${share(count).padStart(6)}  ${leaf.slice(0, 120)}`);
}
