import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import type { Json } from '@policygen/engine';
import { Actor } from '../http/actor';
import { Reason } from '../http/reason';
import type { Revisioned } from '../http/revisioned';
import type { ParameterMutationResult } from './parameters.service';
import { ParametersService } from './parameters.service';

@Controller('api/v1/parameters')
export class ParametersController {
  constructor(@Inject(ParametersService) private readonly parameters: ParametersService) {}

  @Get()
  list(): Revisioned<Readonly<Record<string, Json>>> {
    return this.parameters.list();
  }

  @Get(':name')
  get(@Param('name') name: string): Revisioned<Json> {
    return this.parameters.get(name);
  }

  @Post()
  create(
    @Body() body: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
  ): Promise<Revisioned<ParameterMutationResult>> {
    return this.parameters.create(body, { ifMatch, author, reason });
  }

  @Put(':name')
  replace(
    @Param('name') name: string,
    @Body() value: unknown,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
  ): Promise<Revisioned<ParameterMutationResult>> {
    return this.parameters.replace(name, value, { ifMatch, author, reason });
  }

  @Delete(':name')
  @HttpCode(204)
  remove(
    @Param('name') name: string,
    @Headers('if-match') ifMatch: string | undefined,
    @Actor() author: string,
    @Reason() reason: string | null,
  ): Promise<Revisioned<undefined>> {
    return this.parameters.remove(name, { ifMatch, author, reason });
  }
}
