import { Public } from './auth/access';
import { Controller, Get, Inject } from '@nestjs/common';
import type { HealthCheckResult, HealthIndicatorResult } from '@nestjs/terminus';
import { HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { ReadinessAnswer, ReadinessCheck } from './readiness';
import { evaluateReadiness } from './readiness';
import { ServiceLifecycle } from './service-lifecycle';
import type { ServiceShellOptions } from './service-shell.options';
import { SERVICE_SHELL_OPTIONS } from './service-shell.options';

const STOPPING: ReadinessCheck = { name: 'lifecycle', check: () => ({ ready: false, reason: 'stopping' }) };

/**
 * Liveness (the process answers: 200 whenever it can) and readiness (every check of the service:
 * 503 with each failing check's reason while starting, catching up, cut off from a dependency, or
 * stopping). A degraded check stays 200 and says so: a failing node must not get a service restarted.
 */
@Public()
@Controller('health')
export class HealthController {
  constructor(
    @Inject(SERVICE_SHELL_OPTIONS) private readonly options: ServiceShellOptions,
    @Inject(HealthCheckService) private readonly health: HealthCheckService,
    @Inject(HealthIndicatorService) private readonly indicators: HealthIndicatorService,
    @Inject(ServiceLifecycle) private readonly lifecycle: ServiceLifecycle,
  ) {}

  @Get('live')
  live(): { status: 'ok'; service: string; uptimeSeconds: number } {
    return { status: 'ok', service: this.options.service, uptimeSeconds: Math.round(process.uptime()) };
  }

  @Get('ready')
  async ready(): Promise<HealthCheckResult & { degraded?: true }> {
    const checks = this.lifecycle.stopping ? [STOPPING] : this.options.readiness();
    const report = await evaluateReadiness(checks);
    const result = await this.health.check(
      Object.entries(report.checks).map(
        ([name, answer]) =>
          () =>
            this.indicatorOf(name, answer),
      ),
    );
    return report.degraded ? { ...result, degraded: true } : result;
  }

  private indicatorOf(name: string, answer: ReadinessAnswer): HealthIndicatorResult {
    const session = this.indicators.check(name);
    const data: Record<string, unknown> = { ...answer.details };
    if (answer.reason !== undefined) data['reason'] = answer.reason;
    if (answer.degraded) data['degraded'] = true;
    return answer.ready ? session.up(data) : session.down(data);
  }
}
