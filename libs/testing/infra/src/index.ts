export { getTestInfrastructure, type TestInfrastructure } from './lib/test-infrastructure';
export { INFRA_ENV } from './lib/plan';
export { eventually } from './lib/eventually';
