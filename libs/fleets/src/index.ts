export { buildDemoFleet, buildDemoFleetFile, DEMO_RELAYS } from './lib/demo/demo-fleet';
export { buildBenchFleet, buildBenchNodes } from './lib/bench/bench-fleet';
export type { BenchFleet, BenchFleetOptions, BenchLandmarks } from './lib/bench/bench-fleet';
export type {
  FleetFile,
  TechniqueInput,
  DirectiveInput,
  RelationshipInput,
  RuleInput,
  GroupInput,
  NodeInput,
  RelayInput,
  CriteriaInput,
  CriterionInput,
} from './lib/fleet-file';
export { mulberry32, weighted, sample } from './lib/random';
export type { Random } from './lib/random';
