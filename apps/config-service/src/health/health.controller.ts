import { Controller, Get, Inject } from '@nestjs/common';
import { ConfigStateService } from '../state/config-state.service';

@Controller('health')
export class HealthController {
  constructor(@Inject(ConfigStateService) private readonly state: ConfigStateService) {}

  @Get()
  health(): { status: 'ok'; revision: number } {
    return { status: 'ok', revision: this.state.current.revision };
  }
}
