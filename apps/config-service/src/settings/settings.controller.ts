import { Body, Controller, Get, Headers, Inject, Patch, Put } from '@nestjs/common';
import type { Settings } from '@policygen/engine';
import { Actor } from '../http/actor';
import { Reason } from '../http/reason';
import type { Revisioned } from '../http/revisioned';
import type { SettingsMutationResult } from './settings.service';
import { SettingsService } from './settings.service';

@Controller('api/v1/settings')
export class SettingsController {
  constructor(@Inject(SettingsService) private readonly settings: SettingsService) {}

  @Get()
  get(): Revisioned<Settings> {
    return this.settings.get();
  }

  @Put()
  replace(
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
  ): Promise<Revisioned<SettingsMutationResult>> {
    return this.settings.replace(body, { ifMatch, author, reason });
  }

  @Patch()
  merge(
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
  ): Promise<Revisioned<SettingsMutationResult>> {
    return this.settings.merge(body, { ifMatch, author, reason });
  }
}
