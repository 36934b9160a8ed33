export * from './lib/topics';
export * from './lib/schemas';
