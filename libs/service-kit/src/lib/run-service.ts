import type { INestApplication } from '@nestjs/common';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { EnvironmentError, readEnvironment } from './environment';
import { ServiceLifecycle } from './service-lifecycle';
import { createServiceLogger } from './service-logger';

/** A service started and initialised, not yet listening. */
export interface StartedService {
  readonly app: INestApplication;
  /** Stops its own work (consumers, timers, connections) and closes the app. */
  stop(): Promise<void>;
}

interface ListenSettings {
  readonly HOST: string;
  readonly PORT: number;
  readonly LOG_LEVEL: string;
}

export interface RunServiceOptions<Shape extends z.ZodRawShape> {
  readonly name: string;
  /** The variables the service reads, `HOST`, `PORT` and `LOG_LEVEL` among them. */
  readonly environment: z.ZodObject<Shape>;
  start(settings: z.infer<z.ZodObject<Shape>> & ListenSettings, logger: Logger): Promise<StartedService>;
}

/** How long a stop may take before the process exits anyway (Kubernetes' grace period is 30 s). */
const STOP_TIMEOUT_MS = 25_000;

/**
 * A service's `main`: reads and checks its environment (exit 2 naming each wrong variable),
 * starts it, listens, and stops it on SIGTERM/SIGINT — readiness turns 503 first, then the work
 * stops and the process exits 0 (1 if stopping failed or took too long).
 */
export function runService<Shape extends z.ZodRawShape>(options: RunServiceOptions<Shape>): void {
  let settings: z.infer<z.ZodObject<Shape>> & ListenSettings;
  try {
    settings = readEnvironment(options.environment, process.env) as typeof settings;
  } catch (error) {
    if (!(error instanceof EnvironmentError)) throw error;
    // Made only to say what is wrong: a logger kept for nothing would wake the process every second.
    const bootLogger = createServiceLogger(options.name);
    for (const problem of error.problems) bootLogger.fatal({ problem }, problem);
    process.exit(2);
  }
  const logger = createServiceLogger(options.name, settings.LOG_LEVEL);
  const run = async (): Promise<void> => {
    const service = await options.start(settings, logger);
    // Idle connections outlive the clients' own keep-alive (Node's 5 s would close one under a
    // client about to reuse it: "other side closed").
    Object.assign(service.app.getHttpServer(), { keepAliveTimeout: 65_000, headersTimeout: 66_000 });
    await service.app.listen(settings.PORT, settings.HOST);
    logger.info({ url: await service.app.getUrl() }, `${options.name} started`);
    let stopping = false;
    const stop = async (signal: string): Promise<void> => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'stopping');
      service.app.get(ServiceLifecycle).stopping = true;
      const timer = setTimeout(() => {
        logger.error(`not stopped within ${STOP_TIMEOUT_MS} ms: exiting`);
        process.exit(1);
      }, STOP_TIMEOUT_MS);
      timer.unref();
      try {
        await service.stop();
        logger.info('stopped');
        process.exit(0);
      } catch (error) {
        logger.error({ err: error }, 'stopping failed');
        process.exit(1);
      }
    };
    process.on('SIGTERM', () => void stop('SIGTERM'));
    process.on('SIGINT', () => void stop('SIGINT'));
  };
  run().catch((error: unknown) => {
    // A variable that only the state of a dependency showed wrong (a store without an admin, say).
    if (error instanceof EnvironmentError) {
      for (const problem of error.problems) logger.fatal({ problem }, problem);
      process.exit(2);
    }
    logger.fatal({ err: error }, `${options.name} failed to start: ${(error as Error).message}`);
    // Exits even if a half-started client still holds the event loop; pino writes synchronously.
    process.exit(1);
  });
}
