export * from './lib/pipeline';
