export { getTestInfrastructure, type TestInfrastructure } from './lib/test-infrastructure';
export { INFRA_ENV } from './lib/plan';
export { eventually } from './lib/eventually';
export { ManagedProcess, type ProcessExit } from './lib/managed-process';
export { freePort } from './lib/net';
export { workspaceRoot } from './lib/system';
export { startTestInfrastructure, type RunningInfrastructure } from './lib/start-infrastructure';
export * from './lib/prometheus';
export { SmallDisk } from './lib/small-disk';
