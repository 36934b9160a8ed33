export { GenerationPool } from './lib/pool';
export type { ComputeOptions, ComputeOutput, PoolOptions, RegenerationEntry, WorkerOutput } from './lib/pool';
export {
  generateFleetInParallel,
  regenerateInParallel,
  regenerateOutcomesInParallel,
} from './lib/regenerate';
export type { ParallelOutcomesOptions, ParallelRegenerateOptions, PoolNodeOutcome } from './lib/regenerate';
