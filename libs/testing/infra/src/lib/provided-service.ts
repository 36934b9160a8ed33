/** A piece of infrastructure made available to a test run, and how to give it back. */
export interface ProvidedService<Endpoint> {
  readonly endpoint: Endpoint;
  /** One line for the run's output: what is used, where, and who started it. */
  readonly description: string;
  stop(): Promise<void>;
}

export class InfrastructureError extends Error {
  override readonly name = 'InfrastructureError';
}
