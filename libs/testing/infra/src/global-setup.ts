import { registerWorkspacePaths } from './lib/workspace-paths';

/** Jest globalSetup: gives the whole test run real Kafka, Redis and Postgres. */
export default async function globalSetup(): Promise<void> {
  // Jest loads global setup with Node's own resolver, which knows nothing of the workspace's path aliases.
  registerWorkspacePaths();
  const { setUpTestInfrastructure } = await import('./lib/jest-lifecycle');
  await setUpTestInfrastructure();
}
