import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;
const KiB_PER_MiB = 1024;

export interface ProcessFigures {
  readonly name: string;
  /** Highest resident set size seen (VmHWM: the kernel's own high-water mark; a group's: its highest sampled sum). */
  readonly peakRssMiB: number;
  /** Highest VmRSS sampled within each phase (see `startPhase`). */
  readonly peakRssMiBByPhase: Readonly<Record<string, number>>;
  readonly rssMiB: number;
  /** User + system CPU time so far. */
  readonly cpuSeconds: number;
  /** Times the main thread was woken so far (see `wakeUps`). */
  readonly wakeUps: number;
}

/**
 * Bytes a process handed to and took from the kernel so far (/proc/<pid>/io): `read` and `written`
 * through read and write calls of any kind — sockets, pipes and files alike (`rchar`, `wchar`) —
 * and `disk`, what it caused to be written to storage (`write_bytes`).
 */
export interface IoBytes {
  readonly read: number;
  readonly written: number;
  readonly disk: number;
}

/** The counters of a /proc/<pid>/io text; undefined when one of them is missing. */
export function parseIo(text: string): IoBytes | undefined {
  const field = (name: string): number | undefined => {
    const match = new RegExp(`^${name}:\\s+(\\d+)$`, 'm').exec(text);
    return match ? Number(match[1]) : undefined;
  };
  const read = field('rchar');
  const written = field('wchar');
  const disk = field('write_bytes');
  return read === undefined || written === undefined || disk === undefined
    ? undefined
    : { read, written, disk };
}

interface Member {
  readonly pid: number;
  peakRssKiB: number;
  rssKiB: number;
  cpuSeconds: number;
  mainThreadCpuSeconds: number;
  wakeUps: number;
  /** Undefined while /proc/<pid>/io cannot be read (another user's process). */
  io: IoBytes | undefined;
  gone: boolean;
}

interface Watched {
  readonly name: string;
  readonly members: Map<number, Member>;
  peakRssKiB: number;
  rssKiB: number;
  readonly phasePeakKiB: Map<string, number>;
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

/**
 * The pid of the process listening on TCP `port` (IPv4 or IPv6), among those whose descriptors
 * this user may read; undefined when none is found. Looked up once: it reads every process's fds.
 */
export function findListeningProcess(port: number): number | undefined {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      // st 0A is LISTEN; the inode is the tenth field.
      if (!local || fields[3] !== '0A') continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port && fields[9])
        inodes.add(`socket:[${fields[9]}]`);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) return Number(entry);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** The process's command line, its arguments joined by spaces ('' when it is gone). */
export function commandLineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** A process's user + system CPU seconds so far (/proc/<pid>/stat, in USER_HZ ticks). */
export function cpuSecondsOfProcess(pid: number): number {
  return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).cpuTicks / TICKS_PER_SECOND;
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

function countField(status: string, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+)$`, 'm').exec(status);
  return match ? Number(match[1]) : 0;
}

/**
 * Samples the memory and CPU time of processes from /proc at an interval. The last reading of a
 * process that exited stays: its figures are the ones it ended with (nearly). Several pids may be
 * watched under one name (a database's backends): their CPU and RSS add up.
 */
export class ProcessSampler {
  private readonly watched = new Map<string, Watched>();
  private timer: NodeJS.Timeout | undefined;
  private phase: string | undefined;

  constructor(private readonly intervalMs = 500) {}

  watch(name: string, pid: number): void {
    let watched = this.watched.get(name);
    if (!watched) {
      watched = { name, members: new Map(), peakRssKiB: 0, rssKiB: 0, phasePeakKiB: new Map() };
      this.watched.set(name, watched);
    }
    if (watched.members.has(pid)) return;
    watched.members.set(pid, {
      pid,
      peakRssKiB: 0,
      rssKiB: 0,
      cpuSeconds: 0,
      mainThreadCpuSeconds: 0,
      wakeUps: 0,
      io: undefined,
      gone: false,
    });
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

  /** Readings from now on count towards `phase`'s peaks; gives the CPU seconds of each process at its start. */
  startPhase(phase: string): Map<string, number> {
    this.sample();
    this.phase = phase;
    for (const watched of this.watched.values()) this.notePhasePeak(watched);
    return this.cpuSeconds();
  }

  figures(): ProcessFigures[] {
    this.sample();
    return [...this.watched.values()].map((watched) => ({
      name: watched.name,
      peakRssMiB: Math.round(watched.peakRssKiB / KiB_PER_MiB),
      peakRssMiBByPhase: Object.fromEntries(
        [...watched.phasePeakKiB].map(([phase, kiB]) => [phase, Math.round(kiB / KiB_PER_MiB)]),
      ),
      rssMiB: Math.round(watched.rssKiB / KiB_PER_MiB),
      cpuSeconds: Math.round(cpuOf(watched) * 100) / 100,
      wakeUps: wakeUpsOf(watched),
    }));
  }

  /**
   * Times each process's main thread was woken so far, by name: its voluntary context switches, each
   * a wait that ended (the event loop's for I/O or a timer, a synchronous flush's, the garbage
   * collector's helpers'). A wake-up costs more than the work it brings when that work is small:
   * caches are cold after the wait (README, Performance).
   */
  wakeUps(): Map<string, number> {
    this.sample();
    return new Map([...this.watched.values()].map((watched) => [watched.name, wakeUpsOf(watched)]));
  }

  /**
   * Bytes each process read and wrote so far, by name (a group's added up); absent for a name none
   * of whose processes' counters could be read.
   */
  ioBytes(): Map<string, IoBytes> {
    this.sample();
    const bytes = new Map<string, IoBytes>();
    for (const watched of this.watched.values()) {
      const total = ioOf(watched);
      if (total) bytes.set(watched.name, total);
    }
    return bytes;
  }

  /** CPU seconds of each process so far, by name. */
  cpuSeconds(): Map<string, number> {
    this.sample();
    return new Map([...this.watched.values()].map((watched) => [watched.name, cpuOf(watched)]));
  }

  /**
   * CPU seconds of each process's other threads so far, by name: V8's compiler and collector
   * helpers and libuv's pool, whose work a `--cpu-prof` profile (the main thread's) does not show.
   */
  helperThreadsCpuSeconds(): Map<string, number> {
    this.sample();
    return new Map(
      [...this.watched.values()].map((watched) => [watched.name, cpuOf(watched) - mainThreadCpuOf(watched)]),
    );
  }

  private read(watched: Watched): void {
    let rssKiB = 0;
    let live = 0;
    for (const member of watched.members.values()) {
      if (member.gone) continue;
      try {
        const status = readFileSync(`/proc/${member.pid}/status`, 'utf8');
        const stat = parseStat(readFileSync(`/proc/${member.pid}/stat`, 'utf8'));
        member.rssKiB = statusField(status, 'VmRSS');
        member.peakRssKiB = Math.max(member.peakRssKiB, statusField(status, 'VmHWM'), member.rssKiB);
        member.cpuSeconds = stat.cpuTicks / TICKS_PER_SECOND;
        member.mainThreadCpuSeconds =
          parseStat(readFileSync(`/proc/${member.pid}/task/${member.pid}/stat`, 'utf8')).cpuTicks /
          TICKS_PER_SECOND;
        // The process's status is its main thread's (the thread group leader's): the event loop's.
        member.wakeUps = countField(status, 'voluntary_ctxt_switches');
        member.io = readIo(member.pid) ?? member.io;
      } catch {
        // exited: its CPU stays counted, its memory is freed
        member.gone = true;
      }
      if (!member.gone) {
        rssKiB += member.rssKiB;
        live++;
      }
    }
    watched.rssKiB = rssKiB;
    if (live === 0) return;
    const only = watched.members.size === 1 ? [...watched.members.values()][0] : undefined;
    // A group's members share memory (a database's buffers): their high-water marks do not add up.
    watched.peakRssKiB = Math.max(watched.peakRssKiB, rssKiB, only?.peakRssKiB ?? 0);
    this.notePhasePeak(watched);
  }

  private notePhasePeak(watched: Watched): void {
    if (this.phase === undefined || watched.rssKiB === 0) return;
    watched.phasePeakKiB.set(this.phase, Math.max(watched.phasePeakKiB.get(this.phase) ?? 0, watched.rssKiB));
  }
}

/** A process's I/O counters; undefined when they cannot be read (not ours to read, or gone). */
function readIo(pid: number): IoBytes | undefined {
  try {
    return parseIo(readFileSync(`/proc/${pid}/io`, 'utf8'));
  } catch {
    return undefined;
  }
}

function ioOf(watched: Watched): IoBytes | undefined {
  let total: IoBytes | undefined;
  for (const { io } of watched.members.values()) {
    if (!io) continue;
    total = total
      ? { read: total.read + io.read, written: total.written + io.written, disk: total.disk + io.disk }
      : io;
  }
  return total;
}

function wakeUpsOf(watched: Watched): number {
  let total = 0;
  for (const member of watched.members.values()) total += member.wakeUps;
  return total;
}

function mainThreadCpuOf(watched: Watched): number {
  let total = 0;
  for (const member of watched.members.values()) total += member.mainThreadCpuSeconds;
  return total;
}

function cpuOf(watched: Watched): number {
  let total = 0;
  for (const member of watched.members.values()) total += member.cpuSeconds;
  return total;
}
