import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { z } from 'zod';
import type { DeadLetterPage, ReplayOutcome } from '@policygen/messaging';
import { Requires } from '@policygen/service-kit';
import { Actor } from '../http/actor';
import { badParameter, validationFailed } from '../http/api-errors';
import { requestIssues } from '../http/issue-paths';
import type { DeadLetterTopic } from './dead-letters.service';
import { DeadLettersService } from './dead-letters.service';

export const DEFAULT_DEAD_LETTERS_PAGE = 50;
export const MAX_DEAD_LETTERS_PAGE = 500;
export const MAX_REPLAY_OFFSETS = 10_000;

const replaySchema = z.strictObject({
  topic: z.string().min(1),
  offsets: z.array(z.number().int().min(0)).min(1).max(MAX_REPLAY_OFFSETS).optional(),
});

function integer(name: string, text: string | undefined, min: number, max: number): number | undefined {
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw badParameter(name, `an integer from ${min} to ${max}`, text);
  return value;
}

/**
 * The dead-letter topics, for an operator: what waits in them and why (readers), and its replay
 * to where it came from (editors).
 */
@Controller('api/v1/dead-letters')
@Requires({ role: 'reader' })
export class DeadLettersController {
  constructor(@Inject(DeadLettersService) private readonly deadLetters: DeadLettersService) {}

  @Get()
  async topics(): Promise<{ topics: DeadLetterTopic[] }> {
    return { topics: await this.deadLetters.topics() };
  }

  @Get(':topic')
  list(
    @Param('topic') topic: string,
    @Query('after') after: string | undefined,
    @Query('limit') limit: string | undefined,
  ): Promise<DeadLetterPage> {
    return this.deadLetters.list(
      topic,
      integer('after', after, 0, Number.MAX_SAFE_INTEGER),
      integer('limit', limit, 1, MAX_DEAD_LETTERS_PAGE) ?? DEFAULT_DEAD_LETTERS_PAGE,
    );
  }

  @Post('replay')
  @HttpCode(200)
  @Requires({ role: 'editor' })
  replay(@Body() body: unknown, @Actor() actor: string): Promise<ReplayOutcome> {
    const request = replaySchema.safeParse(body);
    if (!request.success) throw validationFailed(requestIssues(request.error.issues), 'the replay request');
    return this.deadLetters.replay(request.data.topic, request.data.offsets, actor);
  }
}
