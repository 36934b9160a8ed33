export { GenerationPool } from './lib/pool';
export type { ComputeOptions, ComputeOutput, PoolOptions } from './lib/pool';
export { regenerateInParallel } from './lib/regenerate';
export type { ParallelRegenerateOptions } from './lib/regenerate';
