// What the bundles give kafkajs for its `requests/produce/v3/request.js`, which produce requests of
// versions 3 to 7 are made with (tools/build/bundle-cli.mjs): kafkajs's request, whose body is
// written by `encodeProduceRequest` in one pass, and by kafkajs's own encoder when it declines.
const kafkajsProduceRequest = require('kafkajs/src/protocol/requests/produce/v3/request.js');
const { encodeProduceRequest, noteProduceEncoding } = require('./produce-request');

module.exports = (options) => {
  const request = kafkajsProduceRequest(options);
  return {
    ...request,
    encode: async () => {
      const body = encodeProduceRequest(options);
      noteProduceEncoding(body === null ? 'kafkajs' : 'ours');
      // What kafkajs's request framing reads of an encoder: its buffer and its size.
      return body === null
        ? request.encode()
        : { buf: body, offset: body.length, buffer: body, size: () => body.length };
    },
  };
};
