import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Authenticator } from './auth/authenticator';
import type { ReadinessCheck } from './readiness';

/** What a service gives the shell: who it is, where it logs and counts, and how it knows it is ready. */
export interface ServiceShellOptions {
  /** The service's name, on every log line (`service`) and in `/status`. */
  readonly service: string;
  readonly logger: Logger;
  /** The service's metrics, served at `/metrics`; the shell adds the HTTP request durations. */
  readonly registry: Registry;
  /** Read at every probe: the embedded mode adds the other services' checks after start. */
  readonly readiness: () => readonly ReadinessCheck[];
  /** What `/status` answers: the service's own account of where it stands. */
  readonly status: () => unknown;
  /**
   * Who its bearer credentials stand for. Every route but the `@Public()` ones asks for one; without
   * an authenticator only those answer (401 for the rest).
   */
  readonly authenticator?: Authenticator;
  /** Requests logged at `debug` instead of `info` (probes and scrapes, every few seconds). */
  readonly quietPaths?: readonly string[];
}

export const SERVICE_SHELL_OPTIONS = Symbol('SERVICE_SHELL_OPTIONS');
