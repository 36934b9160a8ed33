import { Body, Controller, Get, Headers, HttpCode, Inject, Post } from '@nestjs/common';
import type { Fleet } from '@policygen/engine';
import { Actor } from '../http/actor';
import { Reason } from '../http/reason';
import { YAML_MEDIA_TYPES } from '../http/request-bodies';
import type { Revisioned } from '../http/revisioned';
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
  ): Promise<Revisioned<CommitResult>> {
    return this.changes.applyChangeSet(body, { ifMatch, author, reason });
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
  exportFleet(): Revisioned<Fleet> {
    return this.changes.exportFleet();
  }
}
