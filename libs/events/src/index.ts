export * from './lib/topics';
export * from './lib/schemas';
export * from './lib/node-failures';
