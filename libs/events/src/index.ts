// The event contract (topics, schemas, types) is the SDK's: published with it, shared by the services.
export * from '@policygen/sdk/contract';
export * from './lib/node-failures';
export * from './lib/pipeline-summaries';
export * from './lib/examples';
export * from './lib/asyncapi';
export * from './lib/schema-evolution';
