import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { GeneratorService } from './generator-service';
import { GENERATOR, HealthController } from './health.controller';

/** The generator's HTTP face: health and status (metrics come with observability). */
export async function createGeneratorHttpApp(generator: GeneratorService): Promise<INestApplication> {
  @Module({ controllers: [HealthController], providers: [{ provide: GENERATOR, useValue: generator }] })
  class GeneratorHttpModule {}
  return NestFactory.create(GeneratorHttpModule, { logger: false });
}
