import { readdirSync, readFileSync } from 'node:fs';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;
const KiB_PER_MiB = 1024;

export interface ProcessFigures {
  readonly name: string;
  /** Highest resident set size seen (VmHWM: the kernel's own high-water mark). */
  readonly peakRssMiB: number;
  readonly rssMiB: number;
  /** User + system CPU time so far. */
  readonly cpuSeconds: number;
}

interface Watched {
  readonly name: string;
  readonly pid: number;
  peakRssKiB: number;
  rssKiB: number;
  cpuSeconds: number;
}

/**
 * The pid of the process in `group` that runs `command` with `argument` (a service's bundle under
 * its bash guard, whose own command line names both too).
 */
export function findProcessInGroup(group: number, command: string, argument: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = parseStat(readFileSync(`/proc/${entry}/stat`, 'utf8'));
      if (stat.processGroup !== group) continue;
      const [executable, ...args] = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (executable === command && args.includes(argument)) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function parseStat(text: string): { processGroup: number; cpuTicks: number } {
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After the name: state(3) ppid(4) pgrp(5) … utime(14) stime(15), numbered from 1 over the whole line.
  return {
    processGroup: Number(fields[2]),
    cpuTicks: Number(fields[11]) + Number(fields[12]),
  };
}

function statusField(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  return match ? Number(match[1]) : 0;
}

/**
 * Samples the memory and CPU time of processes from /proc at an interval. The last reading of a
 * process that exited stays: its figures are the ones it ended with (nearly).
 */
export class ProcessSampler {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly intervalMs = 500) {}

  watch(name: string, pid: number): void {
    const watched: Watched = { name, pid, peakRssKiB: 0, rssKiB: 0, cpuSeconds: 0 };
    this.watched.set(name, watched);
    this.read(watched);
  }

  start(): void {
    this.timer ??= setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  sample(): void {
    for (const watched of this.watched.values()) this.read(watched);
  }

  figures(): ProcessFigures[] {
    this.sample();
    return [...this.watched.values()].map((watched) => ({
      name: watched.name,
      peakRssMiB: Math.round(watched.peakRssKiB / KiB_PER_MiB),
      rssMiB: Math.round(watched.rssKiB / KiB_PER_MiB),
      cpuSeconds: Math.round(watched.cpuSeconds * 100) / 100,
    }));
  }

  /** CPU seconds of each process so far, by name. */
  cpuSeconds(): Map<string, number> {
    this.sample();
    return new Map([...this.watched.values()].map((watched) => [watched.name, watched.cpuSeconds]));
  }

  private read(watched: Watched): void {
    try {
      const status = readFileSync(`/proc/${watched.pid}/status`, 'utf8');
      const stat = parseStat(readFileSync(`/proc/${watched.pid}/stat`, 'utf8'));
      watched.rssKiB = statusField(status, 'VmRSS');
      watched.peakRssKiB = Math.max(watched.peakRssKiB, statusField(status, 'VmHWM'), watched.rssKiB);
      watched.cpuSeconds = stat.cpuTicks / TICKS_PER_SECOND;
    } catch {
      // exited: keep the last reading
    }
  }
}
