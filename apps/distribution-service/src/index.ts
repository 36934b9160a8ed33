export { startDistributionService } from './app/distribution-service';
export type { DistributionService, DistributionServiceOptions } from './app/distribution-service';
