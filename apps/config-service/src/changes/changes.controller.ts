import { Body, Controller, Get, Headers, HttpCode, Inject, Post, Query } from '@nestjs/common';
import type { Fleet } from '@policygen/engine';
import type { FleetPlacement } from '@policygen/store';
import { Actor } from '../http/actor';
import { badParameter } from '../http/api-errors';
import { Reason } from '../http/reason';
import { YAML_MEDIA_TYPES } from '../http/request-bodies';
import type { Revisioned } from '../http/revisioned';
import type { ChangePreview } from './change-preview';
import type { CommitResult } from './changes.service';
import { ChangesService } from './changes.service';

@Controller('api/v1')
export class ChangesController {
  constructor(@Inject(ChangesService) private readonly changes: ChangesService) {}

  @Get('revision')
  revision(): Revisioned<{ revision: number }> {
    return this.changes.revision();
  }

  @Post('changes')
  @HttpCode(200)
  apply(
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
    @Query('dryRun') dryRun: string | undefined,
  ): Promise<Revisioned<CommitResult | ChangePreview>> {
    const request = { ifMatch, author, reason };
    return isDryRun(dryRun)
      ? this.changes.previewChangeSet(body, request)
      : this.changes.applyChangeSet(body, request);
  }

  @Post('import')
  @HttpCode(200)
  importFleet(
    @Body() body: unknown,
    @Headers('content-type') contentType: string | undefined,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
  ): Promise<Revisioned<CommitResult>> {
    const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
    const file =
      YAML_MEDIA_TYPES.includes(mediaType) && typeof body === 'string' ? { yaml: body } : { json: body };
    return this.changes.importFleet(file, { ifMatch, author, reason });
  }

  @Get('export')
  exportFleet(@Query('view') view: string | undefined): Revisioned<Fleet | FleetPlacement> {
    if (view === undefined) return this.changes.exportFleet();
    if (view === 'placement') return this.changes.exportPlacement();
    throw badParameter('view', 'placement (or no view: the whole fleet)', view);
  }
}

/** `?dryRun`, `?dryRun=true` or `=1`: preview; absent, `false` or `0`: commit; anything else is a 400. */
function isDryRun(parameter: string | undefined): boolean {
  if (parameter === undefined || parameter === 'false' || parameter === '0') return false;
  if (parameter === '' || parameter === 'true' || parameter === '1') return true;
  throw badParameter('dryRun', 'true or false', parameter);
}
