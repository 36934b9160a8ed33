export * from './topics';
export * from './schemas';
