import { ClientClosedError, ErrorReply, SocketClosedUnexpectedlyError } from 'redis';
import { KafkaJSConnectionError, KafkaJSNonRetriableError, KafkaJSProtocolError } from 'kafkajs';
import { MessageTooLargeError, PublishRejectedError } from '../messaging';
import { TransientFailure, failureText, isTransientFailure } from './transient-failure';

function systemError(code: string): Error {
  return Object.assign(new Error(`${code} happened`), { code });
}

describe('isTransientFailure', () => {
  it.each([
    ['a TransientFailure', new TransientFailure('the cache is restarting')],
    ['a connection refused', systemError('ECONNREFUSED')],
    ['a connection reset', systemError('ECONNRESET')],
    ['a full disk', systemError('ENOSPC')],
    ['a disk quota', systemError('EDQUOT')],
    ['Postgres shutting down (57P01)', systemError('57P01')],
    ['Postgres refusing connections while it starts (57P03)', systemError('57P03')],
    ['a Postgres connection failure (08006)', systemError('08006')],
    ['a Postgres disk full (53100)', systemError('53100')],
    ['pg losing its server mid-query', new Error('Connection terminated unexpectedly')],
    ['pg unable to connect in time', new Error('timeout exceeded when trying to connect')],
    ['a Redis client closed', new ClientClosedError()],
    ['a Redis socket closed', new SocketClosedUnexpectedlyError()],
    ['Redis loading its dataset', new ErrorReply('LOADING Redis is loading the dataset in memory')],
    ['Redis unable to persist', new ErrorReply('MISCONF Redis is configured to save RDB snapshots')],
    ['a kafkajs connection error', new KafkaJSConnectionError('Connection error')],
    ['an HTTP 503', Object.assign(new Error('Service Unavailable'), { status: 503 })],
    ['an HTTP 502 as statusCode', Object.assign(new Error('Bad Gateway'), { statusCode: 502 })],
    ['an HTTP 429', Object.assign(new Error('Too Many Requests'), { status: 429 })],
    ['a timeout', Object.assign(new Error('The operation timed out'), { name: 'TimeoutError' })],
    [
      'fetch failing on a refused connection',
      new TypeError('fetch failed', { cause: systemError('ECONNREFUSED') }),
    ],
    [
      'a refusal wrapped twice',
      new Error('outer', { cause: new Error('middle', { cause: systemError('ETIMEDOUT') }) }),
    ],
    [
      'one of an AggregateError',
      new AggregateError([new Error('x'), systemError('ECONNREFUSED')], 'all failed'),
    ],
    ['a plain object marked transient', { transient: true }],
  ])('%s is transient', (_, error) => {
    expect(isTransientFailure(error)).toBe(true);
  });

  it.each([
    ['a plain Error', new Error('cannot read property x of undefined')],
    ['a TypeError', new TypeError('x is not a function')],
    ['a Redis syntax error reply', new ErrorReply('ERR wrong number of arguments')],
    ['an HTTP 400', Object.assign(new Error('Bad Request'), { status: 400 })],
    ['an HTTP 501', Object.assign(new Error('Not Implemented'), { status: 501 })],
    ['a Postgres unique violation (23505)', systemError('23505')],
    ['a file not found', systemError('ENOENT')],
    ['a message too large for its topic', new MessageTooLargeError('t', ['k'], 10)],
    [
      'a send refused, even by a broker away',
      new PublishRejectedError('no', 't', { cause: systemError('ECONNREFUSED') }),
    ],
    ['a kafkajs non-retriable error', new KafkaJSNonRetriableError('no')],
    [
      'a kafkajs protocol error that will not change',
      new KafkaJSProtocolError(
        Object.assign(new Error('invalid'), { type: 'INVALID_RECORD', retriable: false, code: 87 }),
      ),
    ],
    ['undefined', undefined],
    ['a string', 'ECONNREFUSED'],
  ])('%s is the message’s failure', (_, error) => {
    expect(isTransientFailure(error)).toBe(false);
  });

  it('stops at a cycle of causes', () => {
    const a = new Error('a') as Error & { cause?: unknown };
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect(isTransientFailure(a)).toBe(false);
  });
});

describe('failureText', () => {
  it('names the error, its causes and their codes on one line', () => {
    expect(failureText(new Error('could not store the bundle', { cause: systemError('ENOSPC') }))).toBe(
      'could not store the bundle: ENOSPC happened (ENOSPC)',
    );
    expect(failureText('plain')).toBe('plain');
  });
});
