export * from './lib/topics';
export * from './lib/schemas';
export * from './lib/node-failures';
export * from './lib/examples';
export * from './lib/asyncapi';
export * from './lib/schema-evolution';
