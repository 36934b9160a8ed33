#!/usr/bin/env node
// Prints, for each V8 CPU profile (.cpuprofile) under a directory (as `policygen bench --pipeline
// --profile DIR` leaves them, one folder per service), the functions that took the most self time.
// Usage: node tools/bench/profile-summary.mjs DIR [--top N]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * @typedef {{ functionName: string, url: string, lineNumber: number }} CallFrame
 * @typedef {{ id: number, callFrame: CallFrame, hitCount?: number, children?: number[] }} ProfileNode
 * @typedef {{ nodes: ProfileNode[], samples?: number[], timeDeltas?: number[], startTime: number, endTime: number }} CpuProfile
 * @typedef {{ name: string, where: string, selfMs: number }} FunctionTime
 */

/**
 * Self time per function (name and position), summed over every node of the call tree that runs it.
 * @param {CpuProfile} profile
 * @returns {{ totalMs: number, functions: FunctionTime[] }}
 */
function selfTimes(profile) {
  const samples = profile.samples?.length ?? 0;
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const msPerSample = samples > 0 ? totalMs / samples : 0;
  /** @type {Map<string, FunctionTime>} */
  const byFunction = new Map();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    // lineNumber is 0-based in the profile.
    const where = url ? `${url}:${lineNumber + 1}` : '';
    const key = `${name}\0${where}`;
    const entry = byFunction.get(key) ?? { name, where, selfMs: 0 };
    entry.selfMs += hits * msPerSample;
    byFunction.set(key, entry);
  }
  return { totalMs, functions: [...byFunction.values()].sort((a, b) => b.selfMs - a.selfMs) };
}

/**
 * @param {string} dir
 * @returns {string[]}
 */
function profilesUnder(dir) {
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return profilesUnder(path);
      return entry.endsWith('.cpuprofile') ? [path] : [];
    });
}

function main() {
  // Piped into `head`: the rest is not wanted.
  process.stdout.on('error', (error) => {
    if (/** @type {NodeJS.ErrnoException} */ (error).code === 'EPIPE') process.exit(0);
    throw error;
  });
  const args = process.argv.slice(2);
  const topAt = args.indexOf('--top');
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 25;
  const dir = args[0];
  if (!dir || !Number.isInteger(top) || top < 1) {
    process.stderr.write('usage: node tools/bench/profile-summary.mjs DIR [--top N]\n');
    process.exit(2);
  }
  const files = profilesUnder(dir);
  if (files.length === 0) {
    process.stderr.write(`no .cpuprofile under ${dir}\n`);
    process.exit(1);
  }
  for (const file of files) {
    const { totalMs, functions } = selfTimes(
      /** @type {CpuProfile} */ (JSON.parse(readFileSync(file, 'utf8'))),
    );
    // A service waits most of the time: shares of the busy time say where its CPU goes.
    const busyMs = functions.filter((fn) => fn.name !== '(idle)').reduce((sum, fn) => sum + fn.selfMs, 0);
    const percent = (/** @type {number} */ part, /** @type {number} */ whole) =>
      (whole > 0 ? (100 * part) / whole : 0).toFixed(1).padStart(6);
    process.stdout.write(
      `\n${relative(dir, file)}: ${(totalMs / 1000).toFixed(1)} s profiled, ${(busyMs / 1000).toFixed(1)} s busy\n`,
    );
    process.stdout.write(`${'self ms'.padStart(10)} ${'%'.padStart(6)} ${'% busy'.padStart(6)}  function\n`);
    for (const fn of functions.slice(0, top))
      process.stdout.write(
        `${fn.selfMs.toFixed(0).padStart(10)} ${percent(fn.selfMs, totalMs)} ${fn.name === '(idle)' ? '      ' : percent(fn.selfMs, busyMs)}  ${fn.name}${fn.where ? ` ${fn.where}` : ''}\n`,
      );
  }
}

main();
