import { tearDownTestInfrastructure } from './lib/jest-lifecycle';

/** Jest globalTeardown: stops what the global setup started; no process outlives the run. */
export default async function globalTeardown(): Promise<void> {
  await tearDownTestInfrastructure();
}
