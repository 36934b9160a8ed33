import { Controller, Get, Inject, Param, Query, Sse } from '@nestjs/common';
import type { MessageEvent } from '@nestjs/common';
import type { NodeExplanation } from '@policygen/engine';
import { from, interval, map, startWith, switchMap } from 'rxjs';
import type { Observable } from 'rxjs';
import { badParameter, notFound } from '../http/api-errors';
import type { LagReport, NodeStatus, RevisionProgress } from './pipeline-view';
import type { FailurePage, PipelineStatus } from './pipeline.service';
import { PipelineService } from './pipeline.service';

const DEFAULT_WINDOW_SECONDS = 60;
const MAX_WINDOW_SECONDS = 600;

function integer(name: string, text: string | undefined, min: number, max: number, fallback: number): number {
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw badParameter(name, `an integer from ${min} to ${max}`, text);
  return value;
}

/**
 * Where the pipeline stands, from the pipeline summaries (the generation and distribution events a batch at a time): a node's way (generated,
 * on each relay, its failure), the failing nodes, a revision's progress, the relays' sync, the
 * consumer groups' lag, the lag of each stage — and all of it live, as server-sent events.
 */
@Controller('api/v1')
export class PipelineController {
  constructor(@Inject(PipelineService) private readonly pipeline: PipelineService) {}

  @Get('nodes/:id/status')
  nodeStatus(@Param('id') nodeId: string): NodeStatus {
    const status = this.pipeline.nodeStatus(nodeId);
    if (!status) throw notFound(`node ${nodeId}`);
    return status;
  }

  /** Why the node gets its policies in this order (`policygen explain`), at the current revision. */
  @Get('nodes/:id/explain')
  explain(@Param('id') nodeId: string): NodeExplanation {
    const explanation = this.pipeline.explain(nodeId);
    if (!explanation) throw notFound(`node ${nodeId}`);
    return explanation;
  }

  @Get('failures')
  failures(
    @Query('code') code: string | undefined,
    @Query('directive') directiveId: string | undefined,
    @Query('rule') ruleId: string | undefined,
    @Query('after') after: string | undefined,
    @Query('limit') limit: string | undefined,
  ): FailurePage {
    return this.pipeline.failures({
      code: code || undefined,
      directiveId: directiveId || undefined,
      ruleId: ruleId || undefined,
      after: after || undefined,
      limit: integer('limit', limit, 1, 1_000, 50),
    });
  }

  @Get('revisions/:revision/progress')
  revisionProgress(@Param('revision') revision: string): RevisionProgress {
    const number = integer('revision', revision, 1, Number.MAX_SAFE_INTEGER, 0);
    const progress = this.pipeline.revisionProgress(number);
    if (!progress)
      throw notFound(`progress of revision ${number} (no node was generated at it, or it is too old)`);
    return progress;
  }

  @Get('pipeline/status')
  status(): Promise<PipelineStatus> {
    return this.pipeline.status();
  }

  @Get('pipeline/lag')
  lag(@Query('window') window: string | undefined): LagReport {
    return this.pipeline.lag(integer('window', window, 1, MAX_WINDOW_SECONDS, DEFAULT_WINDOW_SECONDS));
  }

  /** A `snapshot` event each second: `{at, status, lag}`, the dashboard's one source. */
  @Sse('pipeline/stream')
  stream(@Query('window') window: string | undefined): Observable<MessageEvent> {
    const seconds = integer('window', window, 1, MAX_WINDOW_SECONDS, DEFAULT_WINDOW_SECONDS);
    return interval(1_000).pipe(
      startWith(0),
      switchMap(() => from(this.pipeline.status())),
      map((status) => ({
        type: 'snapshot',
        data: { at: new Date().toISOString(), status, lag: this.pipeline.lag(seconds) },
      })),
    );
  }
}
