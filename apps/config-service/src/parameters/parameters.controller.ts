import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import type { Json } from '@policygen/engine';
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
  ): Promise<Revisioned<ParameterMutationResult>> {
    return this.parameters.create(body, ifMatch);
  }

  @Put(':name')
  replace(
    @Param('name') name: string,
    @Body() value: unknown,
    @Headers('if-match') ifMatch: string | undefined,
  ): Promise<Revisioned<ParameterMutationResult>> {
    return this.parameters.replace(name, value, ifMatch);
  }

  @Delete(':name')
  @HttpCode(204)
  remove(
    @Param('name') name: string,
    @Headers('if-match') ifMatch: string | undefined,
  ): Promise<Revisioned<undefined>> {
    return this.parameters.remove(name, ifMatch);
  }
}
