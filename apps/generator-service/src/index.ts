export { startGeneratorService } from './app/generator-service';
export type { GeneratorService, GeneratorServiceOptions } from './app/generator-service';
