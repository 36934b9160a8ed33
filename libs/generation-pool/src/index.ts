export { GenerationPool } from './lib/pool';
export type { ComputeOptions, ComputeOutput, PoolOptions, RegenerationEntry, WorkerOutput } from './lib/pool';
export { generateFleetInParallel, regenerateInParallel } from './lib/regenerate';
export type { ParallelRegenerateOptions } from './lib/regenerate';
