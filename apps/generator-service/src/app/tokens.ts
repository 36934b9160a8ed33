export const GENERATION_LOOP = Symbol('GENERATION_LOOP');
export const DEAD_LETTERS = Symbol('DEAD_LETTERS');
