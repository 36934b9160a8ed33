import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import type { RevisionDetail, RevisionsPage } from './revisions.service';
import { RevisionsService } from './revisions.service';

@Controller('api/v1/revisions')
export class RevisionsController {
  constructor(@Inject(RevisionsService) private readonly revisions: RevisionsService) {}

  @Get()
  page(
    @Query('after') after: string | undefined,
    @Query('limit') limit: string | undefined,
  ): Promise<RevisionsPage> {
    return this.revisions.page(after, limit);
  }

  @Get(':revision')
  one(@Param('revision') revision: string): Promise<RevisionDetail> {
    return this.revisions.one(revision);
  }
}
