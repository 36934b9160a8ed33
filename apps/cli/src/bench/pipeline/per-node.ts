import type { IoBytes } from './process-sampler';

/** What a process is in the run, for the per-node figures: only services count in their total. */
export type ProcessRole = 'service' | 'fresh relay' | 'bench' | 'infrastructure';

/** A process's CPU per unit of work, in ms, and as a multiple of the engine's yardstick. */
export interface PerNodeCost {
  /** CPU ms of the steady load and its drain per node change (null: no node changed). */
  readonly cpuMsPerNodeChange: number | null;
  /** CPU ms of the import per node with a bundle (null: none). */
  readonly cpuMsPerNode: number | null;
  readonly steadyTimesEngine: number | null;
  readonly importTimesEngine: number | null;
}

/** The phases whose CPU is the steady load's: the drain finishes the work the load started. */
export const STEADY_PHASES = ['steady', 'drain'] as const;
export const IMPORT_PHASE = 'import';

/** What a process counted in the steady phases (CPU seconds, wake-ups), from its figures by phase. */
export function steadyTotal(byPhase: Readonly<Record<string, number>>): number {
  return STEADY_PHASES.reduce((sum, phase) => sum + (byPhase[phase] ?? 0), 0);
}

export function importCpuSeconds(byPhase: Readonly<Record<string, number>>): number {
  return byPhase[IMPORT_PHASE] ?? 0;
}

/** The per-node figures of CPU seconds spent on `nodeChanges` changes and an import of `nodes` nodes. */
export function perNodeCost(
  cpu: { readonly steadySeconds: number; readonly importSeconds: number },
  work: { readonly nodeChanges: number; readonly nodes: number },
  engineMsPerNode: number,
): PerNodeCost {
  const per = (seconds: number, count: number): number | null =>
    count > 0 ? round((seconds * 1000) / count, 4) : null;
  const times = (ms: number | null): number | null =>
    ms === null || !(engineMsPerNode > 0) ? null : round(ms / engineMsPerNode, 2);
  const cpuMsPerNodeChange = per(cpu.steadySeconds, work.nodeChanges);
  const cpuMsPerNode = per(cpu.importSeconds, work.nodes);
  return {
    cpuMsPerNodeChange,
    cpuMsPerNode,
    steadyTimesEngine: times(cpuMsPerNodeChange),
    importTimesEngine: times(cpuMsPerNode),
  };
}

/**
 * KiB a process read, wrote and sent to storage per node change in the steady phases and per node
 * at import (null: no work, or no counters for those phases): each hop's bytes, which a node
 * change should move once.
 */
export function ioPerNode(
  byPhase: Readonly<Record<string, IoBytes>>,
  work: { readonly nodeChanges: number; readonly nodes: number },
): { readonly steadyKiBPerNodeChange: IoBytes | null; readonly importKiBPerNode: IoBytes | null } {
  const per = (phases: readonly string[], count: number): IoBytes | null => {
    const counted = phases.map((phase) => byPhase[phase]).filter((bytes) => bytes !== undefined);
    if (count <= 0 || counted.length === 0) return null;
    const kib = (pick: (bytes: IoBytes) => number): number =>
      round(counted.reduce((sum, bytes) => sum + pick(bytes), 0) / 1024 / count, 2);
    return {
      read: kib((bytes) => bytes.read),
      written: kib((bytes) => bytes.written),
      disk: kib((bytes) => bytes.disk),
    };
  };
  return {
    steadyKiBPerNodeChange: per(STEADY_PHASES, work.nodeChanges),
    importKiBPerNode: per([IMPORT_PHASE], work.nodes),
  };
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

/**
 * The services' multiples against the mean of the ruler before the run and after it: steadier than
 * either when the machine's speed moved during the run (both are reported; the ruler before is the one judged by).
 */
export function timesMeanRuler(
  cost: Pick<PerNodeCost, 'cpuMsPerNodeChange' | 'cpuMsPerNode'>,
  rulerBefore: number,
  rulerAfter: number,
): { readonly steady: number | null; readonly import: number | null } {
  const mean = (rulerBefore + rulerAfter) / 2;
  const times = (ms: number | null): number | null =>
    ms === null || !(mean > 0) ? null : round(ms / mean, 2);
  return { steady: times(cost.cpuMsPerNodeChange), import: times(cost.cpuMsPerNode) };
}
