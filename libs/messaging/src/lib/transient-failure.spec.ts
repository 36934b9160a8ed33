import { isTransientFailure } from './transient-failure';

function withCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('isTransientFailure', () => {
  it.each([
    ['a refused connection', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    [
      'Postgres shutting down (57P01)',
      withCode('terminating connection due to administrator command', '57P01'),
    ],
    ['Postgres starting up (57P03)', withCode('the database system is starting up', '57P03')],
    ['a lost connection (08006)', withCode('connection failure', '08006')],
    ['a full disk', withCode('ENOSPC: no space left on device, write', 'ENOSPC')],
    ['pg losing its socket', new Error('Connection terminated unexpectedly')],
    ['a retriable client error', Object.assign(new Error('leader not available'), { retriable: true })],
    [
      'a cause two levels down',
      new Error('commit failed', { cause: new Error('x', { cause: withCode('reset', 'ECONNRESET') }) }),
    ],
  ])('%s is transient', (_name, error) => {
    expect(isTransientFailure(error)).toBe(true);
  });

  it.each([
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a constraint violation (23505)', withCode('duplicate key value violates unique constraint', '23505')],
    ['a file that is not there', withCode('ENOENT: no such file or directory', 'ENOENT')],
    ['a client error marked not retriable', Object.assign(new Error('invalid record'), { retriable: false })],
    ['not an error', 'ECONNREFUSED'],
  ])('%s is not', (_name, error) => {
    expect(isTransientFailure(error)).toBe(false);
  });
});
