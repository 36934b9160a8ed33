export const DISTRIBUTOR = Symbol('DISTRIBUTOR');
export const DEAD_LETTERS = Symbol('DEAD_LETTERS');
