import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Put } from '@nestjs/common';
import type { Type } from '@nestjs/common';
import { Actor } from '../http/actor';
import { Reason } from '../http/reason';
import type { Revisioned } from '../http/revisioned';
import type { EntityKey, EntityKind } from './entity-kinds';
import { ENTITY_KINDS } from './entity-kinds';
import type { EntityMutationResult } from './entity.service';
import { EntityService } from './entity.service';

/** The URL of an entity collection under the API root. */
export function collectionRoute(kind: EntityKind): string {
  return `api/v1/${kind.collection}`;
}

/** `:id`, `:id/:version`, `:from/:kind/:to`: the route of one entity under its collection. */
export function keyRoute(kind: EntityKind): string {
  return kind.keyFields.map((field) => `:${field}`).join('/');
}

/**
 * A controller for one collection: `GET /`, `POST /`, and `GET`/`PUT`/`DELETE` on the key route.
 * One class per collection, made here, since they differ only in their route and key.
 */
function entityController(kind: EntityKind): Type<unknown> {
  const byKey = keyRoute(kind);

  @Controller(collectionRoute(kind))
  class EntityController {
    constructor(@Inject(EntityService) private readonly entities: EntityService) {}

    @Get()
    list(): Revisioned<readonly object[]> {
      return this.entities.list(kind);
    }

    @Get(byKey)
    get(@Param() key: EntityKey): Revisioned<object> {
      return this.entities.get(kind, key);
    }

    @Post()
    create(
      @Body() body: unknown,
      @Headers('if-match') ifMatch: string | undefined,
      @Actor() author: string,
      @Reason() reason: string | null,
    ): Promise<Revisioned<EntityMutationResult>> {
      return this.entities.create(kind, body, { ifMatch, author, reason });
    }

    @Put(byKey)
    replace(
      @Param() key: EntityKey,
      @Body() body: unknown,
      @Headers('if-match') ifMatch: string | undefined,
      @Actor() author: string,
      @Reason() reason: string | null,
    ): Promise<Revisioned<EntityMutationResult>> {
      return this.entities.replace(kind, key, body, { ifMatch, author, reason });
    }

    @Delete(byKey)
    @HttpCode(204)
    remove(
      @Param() key: EntityKey,
      @Headers('if-match') ifMatch: string | undefined,
      @Actor() author: string,
      @Reason() reason: string | null,
    ): Promise<Revisioned<undefined>> {
      return this.entities.remove(kind, key, { ifMatch, author, reason });
    }
  }

  const name = `${kind.collection[0]?.toUpperCase()}${kind.collection.slice(1)}Controller`;
  Object.defineProperty(EntityController, 'name', { value: name });
  return EntityController;
}

export const ENTITY_CONTROLLERS: readonly Type<unknown>[] = ENTITY_KINDS.map(entityController);
